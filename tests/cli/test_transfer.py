"""``pcmem export`` and ``pcmem import --upsert`` (issue 43): a memory moved between stores and to and from mem0's
JSON loses nothing — text, kind, key, metadata and date — and importing it again changes nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

import pcmem
from pcmem.cli import main

OLD = datetime(2021, 3, 4, 5, 6, 7, 891011, tzinfo=UTC)


def cli(db: Path, *args: str, stdin: str | None = None) -> str:
    result = CliRunner().invoke(main, ["--db", str(db), *args], input=stdin)
    assert result.exit_code == 0, result.output
    return result.stdout


def facts(db: Path) -> dict[tuple[str, str], tuple[str, str, str, datetime]]:
    """Every active entry as (scope, key) → (text, kind, canonical metadata, date)."""
    with pcmem.open(db, embedder=None) as runtime:
        found = {}
        for summary in runtime.memory.scopes():
            for entry in runtime.memory.for_scope(summary.scope).list().entries:
                version = entry.entry
                key = version.entry_id.split("~")[0]
                found[summary.scope, key] = (version.text, version.kind, json.dumps(version.metadata, sort_keys=True),
                                             version.created_at)
        return found


@pytest.fixture
def source(tmp_path: Path) -> Path:
    """A store with what a round trip can lose: typed and nested metadata, odd text, keys and generated ids, a
    revised entry, a retired one (not exported), a key written again after a forget, past dates, two scopes."""
    db = tmp_path / "source.duckdb"
    with pcmem.open(db, embedder=None) as runtime:
        ana = runtime.memory.for_scope("user:ana")
        ana.remember(pcmem.RememberRequest(entries=(
            pcmem.NewEntry(entry_id="editor", kind="preference", text="Ana prefers the Helix editor.",
                           metadata={"source": "chat", "turn": 3, "weight": 1.0, "flag": True, "tags": ["a", "ü"]}),
            pcmem.NewEntry(entry_id="note", text="Line one\nline two\u2028and \"quoted\" \\ text — ünïcödé 中文",
                           created_at=OLD),
            pcmem.NewEntry(text="An entry with a generated id.", metadata={"nested": {"deep": [1, None, 2.5]}}),
            pcmem.NewEntry(entry_id="phone", text="Ana's phone is 555-0101."),
            pcmem.NewEntry(entry_id="old", text="Retired, so not exported."),
        )))
        ana.revise("editor", text="Ana prefers Neovim.", expected_version=1)
        ana.retire("old", expected_version=1)
        ana.forget("phone")
        ana.remember("Ana's phone is 555-0199.", entry_id="phone")  # its id is phone~2, its key phone
        runtime.memory.for_scope("project").remember("Deploys go out on Tuesdays.", kind="decision",
                                                     entry_id="deploy")
    return db


def test_pcmem_to_pcmem_is_lossless_and_importing_twice_changes_nothing(tmp_path, source):
    exported = cli(source, "export")
    lines = [json.loads(line) for line in exported.splitlines()]
    assert {(line["scope"], line["entry_id"]) for line in lines} >= {("user:ana", "phone"), ("project", "deploy")}
    assert all(line["entry_id"] != "old" for line in lines), "active entries only"
    copy = tmp_path / "copy.duckdb"
    for attempt in range(2):
        result = CliRunner().invoke(main, ["--db", str(copy), "import", "--upsert", "--json", "-"], input=exported)
        assert result.exit_code == 0, result.output
        written = json.loads(result.stdout)
        revisions = {scope: outcome["memory"]["revision"] for scope, outcome in written.items()}
        assert revisions == {"project": 1, "user:ana": 1}, f"attempt {attempt + 1}: a second import writes nothing"
        assert all(outcome["unchanged"] == (attempt == 1) for outcome in written.values())
    assert cli(copy, "export") == exported, "byte for byte"
    assert facts(copy) == facts(source)
    assert facts(copy)["user:ana", "note"][3] == OLD, "the date, to the microsecond"


def test_mem0_json_out_and_in_is_lossless_and_importing_twice_changes_nothing(tmp_path, source):
    document = json.loads(cli(source, "export", "--format", "mem0"))
    item = next(i for i in document["results"] if i["id"] == "editor")
    assert (item["memory"], item["categories"], item["user_id"]) == ("Ana prefers Neovim.", ["preference"],
                                                                    "user:ana")
    assert item["metadata"]["turn"] == 3 and len(item["hash"]) == 32 and item["created_at"] == item["updated_at"]
    mem0_file = tmp_path / "memories.json"
    mem0_file.write_text(json.dumps(document), encoding="utf-8")
    copy = tmp_path / "via-mem0.duckdb"
    for _ in range(2):
        cli(copy, "import", "--upsert", "--format", "mem0", str(mem0_file))
    assert facts(copy) == facts(source)
    assert cli(copy, "export") == cli(source, "export")
    assert json.loads(cli(copy, "export", "--format", "mem0")) == document


#: What mem0's get_all returns (OSS v1.1 output), with its own ids, dates and categories.
MEM0_GET_ALL = {"results": [
    {"id": "892db2ae-06d9-49e5-8b3e-585ef9b85b8e", "memory": "Likes sci-fi movies", "hash": "x",
     "metadata": {"category": "movies"}, "categories": ["entertainment"], "created_at": "2024-07-20T01:02:03-07:00",
     "updated_at": "2024-07-21T10:00:00.500000-07:00", "user_id": "alice"},
    {"id": "1f0e1c2a-0000-4000-8000-000000000001", "memory": "Is vegetarian", "metadata": None,
     "categories": ["food", "health"], "created_at": "2024-07-22T08:00:00Z", "updated_at": None, "user_id": "alice"},
]}
#: What mem0's add takes (stored as given, as with infer=False).
MEM0_ADD = {"messages": [{"role": "user", "content": "I'm planning to watch a movie tonight."},
                         {"role": "assistant", "content": ""},
                         {"role": "assistant", "content": "How about a sci-fi film?"}],
            "user_id": "alice", "metadata": {"session": "s1"}}


@pytest.mark.parametrize("document", [MEM0_GET_ALL, MEM0_GET_ALL["results"], MEM0_ADD, [MEM0_ADD]],
                         ids=["get_all", "bare list", "add", "add list"])
def test_mem0_documents_import_as_entries_once(tmp_path, document):
    path = tmp_path / "mem0.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    db = tmp_path / "mem0.duckdb"
    cli(db, "import", "--upsert", "--format", "mem0", str(path))
    first = facts(db)
    cli(db, "import", "--upsert", "--format", "mem0", str(path))
    assert facts(db) == first, "importing the same document twice adds nothing"
    if "messages" in json.dumps(document):
        assert sorted(text for text, kind, _, _ in first.values()) == [
            "How about a sci-fi film?", "I'm planning to watch a movie tonight."]
        assert {json.loads(meta)["role"] for _, _, meta, _ in first.values()} == {"user", "assistant"}
        return
    movies = first["alice", "892db2ae-06d9-49e5-8b3e-585ef9b85b8e"]
    assert movies[:3] == ("Likes sci-fi movies", "entertainment", '{"category": "movies"}')
    assert movies[3] == datetime(2024, 7, 21, 17, 0, 0, 500000, tzinfo=UTC), "updated_at, in UTC"
    food = first["alice", "1f0e1c2a-0000-4000-8000-000000000001"]
    assert food[1] == "fact" and json.loads(food[2]) == {"categories": ["food", "health"]}


def test_bad_mem0_items_are_all_named_and_nothing_is_imported(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"results": [{"id": "ok", "memory": "fine", "user_id": "u"}, {"memory": "x"},
                                            {"id": "has space", "memory": "y", "user_id": "u"}, 7]}))
    result = CliRunner().invoke(main, ["--db", str(tmp_path / "m.duckdb"), "import", "--format", "mem0", str(path)])
    assert result.exit_code == pcmem.InputError.exit_code
    message = result.output
    assert "2 bad items, nothing imported" in message and "item 3" in message and "item 4" in message
    assert not (tmp_path / "m.duckdb").exists() or not facts(tmp_path / "m.duckdb")


def test_upsert_writes_a_new_version_only_where_the_file_differs(tmp_path, source):
    lines = [json.loads(line) for line in cli(source, "export", "--scope", "project").splitlines()]
    lines[0]["text"] = "Deploys go out on Thursdays."
    cli(source, "import", "--upsert", "-", stdin="".join(json.dumps(line) + "\n" for line in lines))
    with pcmem.open(source, embedder=None) as runtime:
        deploy = runtime.memory.for_scope("project").get_entry("deploy").entry
    assert (deploy.version, deploy.text) == (2, "Deploys go out on Thursdays.")
    without = CliRunner().invoke(main, ["--db", str(source), "import", "-"], input=json.dumps(lines[0]) + "\n")
    assert without.exit_code == pcmem.InputError.exit_code and "use revise (or upsert)" in without.output


def test_export_piped_into_import_between_two_processes(tmp_path, source):
    """As a user moves a memory: `pcmem --db old export | pcmem --db new import --upsert -`, real processes."""
    target = tmp_path / "piped.duckdb"
    command = (f"{sys.executable} -m pcmem --db {source} export | "
               f"{sys.executable} -m pcmem --db {target} import --upsert -")
    done = subprocess.run(["bash", "-o", "pipefail", "-c", command], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert facts(target) == facts(source)
