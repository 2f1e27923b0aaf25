"""Issue 16: input that real data contains, and hostile input — accepted or refused with a typed one-line error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import pcmem
from pcmem.cli import main
from pcmem.errors import ConfigurationError, InputError, PcmemError
from pcmem.types.memory import Citation, NewEntry
from pcmem.validation import normalize_text, parse_metadata_json


def cli(tmp_path: Path, *args: str, input: str | None = None):
    return CliRunner().invoke(main, ["--db", str(tmp_path / "m.duckdb"), *args], input=input)


@pytest.mark.parametrize("raw", ["1" * 5000, "[" * 60000, '{"a": ' + "[" * 60000, '{"n": -' + "9" * 5000 + "}"])
def test_hostile_json_is_an_input_error(raw):
    with pytest.raises(InputError):
        parse_metadata_json(raw)


def test_hostile_jsonl_and_metadata_exit_2_in_one_line(tmp_path):
    source = tmp_path / "in.jsonl"
    source.write_text('{"text": "ok", "metadata": {"n": ' + "7" * 5000 + "}}\n" + "[" * 60000 + "\n")
    result = cli(tmp_path, "import", "-s", "s", str(source))
    assert result.exit_code == 2 and len(result.stderr.strip().splitlines()) == 1, result.output
    assert "2 bad lines" in result.stderr and "in.jsonl:1:" in result.stderr and "in.jsonl:2:" in result.stderr
    result = cli(tmp_path, "remember", "-s", "s", "-m", "[" * 60000, "x")
    assert result.exit_code == 2 and "Traceback" not in result.output


def test_vertical_tab_and_form_feed_are_whitespace_but_nul_and_esc_are_refused():
    assert normalize_text("chat\x0bline\x0cnext") == "chat\x0bline\x0cnext"
    for bad in ("nul\x00", "esc\x1b[31m", "bell\x07"):
        with pytest.raises(InputError, match="control character"):
            normalize_text(bad)


@pytest.mark.parametrize("text", ["\u200b", "\ufeff", "\u200b\u200d \u2060", " \ufeff\n"])
def test_text_of_only_invisible_characters_is_empty(text):
    with pytest.raises(InputError, match="empty"):
        normalize_text(text)


def test_jsonl_splits_on_newline_only_and_accepts_a_bom(tmp_path):
    source = tmp_path / "in.jsonl"
    lines = [json.dumps({"text": "line\u2028separator and\u2029paragraph"}, ensure_ascii=False),
             json.dumps({"text": "vt\x0bff\x0c"})]
    source.write_bytes(b"\xef\xbb\xbf" + "\n".join(lines).encode("utf-8") + b"\r\n")
    result = cli(tmp_path, "import", "-s", "s", str(source), "--json")
    assert result.exit_code == 0, result.output
    assert len(json.loads(result.stdout)["citations"]) == 2


def test_jsonl_reports_every_bad_line_up_to_a_cap(tmp_path):
    source = tmp_path / "in.jsonl"
    source.write_text("\n".join(["not json"] * 30 + [json.dumps({"text": "fine"})]) + "\n")
    result = cli(tmp_path, "import", "-s", "s", str(source))
    assert result.exit_code == 2 and "30 bad lines" in result.stderr and "and 10 more" in result.stderr
    assert not (tmp_path / "m.duckdb").exists() or "s" not in cli(tmp_path, "scopes").stdout


def test_dash_means_standard_input(tmp_path):
    result = cli(tmp_path, "remember", "-s", "s", "-", "--json", input="from stdin\n")
    assert result.exit_code == 0, result.output
    result = cli(tmp_path, "import", "-s", "s", "-", "--json", input=json.dumps({"text": "piped"}) + "\n")
    assert result.exit_code == 0, result.output
    listed = json.loads(cli(tmp_path, "list", "-s", "s", "--json").stdout)
    assert sorted(e["entry"]["text"] for e in listed["entries"]) == ["from stdin", "piped"]


def test_public_api_wrong_types_are_pcmem_errors(db_path):
    with pcmem.open(db_path, embedder=None) as runtime:
        memory = runtime.memory.for_scope("s")
        memory.remember(NewEntry(entry_id="e1", text="x"))
        calls = [
            lambda: memory.get_entry("e1", "1"),
            lambda: memory.get_entry(1),
            lambda: Citation(artifact_id=1, revision=1, entry_id="e1", entry_version_id="v"),
            lambda: memory.get("not a citation"),
            lambda: memory.revise({"entry_id": "e1"}),
            lambda: memory.retire("e1"),
            lambda: memory.list("active"),
            lambda: memory.changes("0"),
            lambda: memory.remember(42),
            lambda: runtime.memory.for_scope(None),
            lambda: memory.search(3),
        ]
        for call in calls:
            with pytest.raises(PcmemError):
                call()


def test_tui_without_a_terminal_is_refused(tmp_path):
    result = cli(tmp_path, "tui")
    assert result.exit_code == ConfigurationError.exit_code and "terminal" in result.stderr


class FailingQueries:
    def __init__(self) -> None:
        from fakes import HashEmbedder

        self.inner = HashEmbedder()
        self.profile = self.inner.profile

    def embed_documents(self, texts, progress=None):
        return self.inner.embed_documents(texts, progress)

    def embed_query(self, text):
        from pcmem.errors import EmbeddingError

        raise EmbeddingError("the model crashed")


def test_auto_mode_with_a_failing_embedder_warns_in_one_line(db_path, caplog):
    with pcmem.open(db_path, embedder=FailingQueries()) as runtime:
        memory = runtime.memory.for_scope("s")
        memory.remember("kiwis grow on vines")
        page = memory.search("kiwis")
    assert page.mode == "fts" and page.hits
    [record] = [r for r in caplog.records if "embedding the query failed" in r.getMessage()]
    assert record.exc_info is None and "the model crashed" in record.getMessage()
