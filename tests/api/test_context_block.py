"""Context blocks (issue 43): relevant and recent entries, each once, cited, never over the budget; and the recent
entries they start from.

The budget is a property over every input hypothesis finds (the packer alone, then the library end to end on a real
store): the block never exceeds ``max_bytes`` nor ``max_tokens`` (:func:`pcmem.estimate_tokens`), every candidate is
either in it or accounted for in ``omitted``, each entry appears once, and the same input packs to the same bytes.
"""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta

import pytest
from docs_pages import pages
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pcmem
from pcmem import ContextRequest, InputError, estimate_tokens
from pcmem.memory import recent as recent_module
from pcmem.memory.context_block import HEADER, MAX_ITEM_TEXT_BYTES, Candidate, pack
from pcmem.types.memory import Citation, EntryVersion, MemoryEntry

WHEN = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
TEXTS = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=3000).filter(
    lambda t: t.strip() != "")


def _candidate(scope: str, entry_id: str, text: str, kind: str = "fact", source: str = "relevant") -> Candidate:
    version = EntryVersion(entry_id=entry_id, entry_version_id=f"ver_{entry_id}", version=1, kind=kind, text=text,
                           content_hash="h", metadata={}, created_in_revision=1, created_at=WHEN)
    citation = Citation(artifact_id="mem_x", revision=1, entry_id=entry_id, entry_version_id=f"ver_{entry_id}")
    return Candidate(scope, MemoryEntry(citation=citation, state="active", entry=version), source)


@st.composite
def candidates(draw: st.DrawFn) -> list[Candidate]:
    """Candidates as a search and a recent read give them: an entry (scope, id) has one text, and may come twice
    (a hit that is also recent); different entries may share a text."""
    keys = st.tuples(st.sampled_from(["user:ana", "project", "a \"quoted\"\nscope", "中文"]),
                     st.sampled_from(["k1", "k2", "k3", "k4", "k5", "city", "x~2"]))
    texts = TEXTS | st.sampled_from(["Ana lives in Porto.", "ana LIVES in   porto.", "é" * 2500, "a\u2028b\nc\"d"])
    entries = draw(st.dictionaries(keys, st.tuples(texts, st.sampled_from(["fact", "preference", "odd\nkind"])),
                                   max_size=8))
    if not entries:
        return []
    order = draw(st.lists(st.tuples(st.sampled_from(sorted(entries)), st.sampled_from(["relevant", "recent"])),
                          max_size=12))
    return [_candidate(scope, entry_id, *entries[scope, entry_id], source=source)
            for (scope, entry_id), source in order]


@settings(max_examples=300, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(found=candidates(), budget=st.integers(64, 20_000), tokens=st.none() | st.integers(16, 6_000))
def test_a_packed_block_never_exceeds_its_budget(found, budget, tokens):
    text, items, omitted = pack(found, budget, tokens)
    assert len(text.encode("utf-8")) <= budget and (tokens is None or estimate_tokens(text) <= tokens)
    assert (text, items, omitted) == pack(found, budget, tokens), "deterministic"
    assert len(items) + len(omitted) == len(found), "every candidate is in the block or said to be left out"
    assert [item.number for item in items] == list(range(1, len(items) + 1))
    assert len({(item.scope, item.citation.entry_id) for item in items}) == len(items), "each entry once"
    if not items:
        assert text == ""
        return
    lines = text.split("\n")
    assert lines[0] == HEADER and len(lines) == len(items) + 1, "an entry's text never starts a line of its own"
    for line, item in zip(lines[1:], items, strict=True):
        assert line.startswith(f"[{item.number}] ")
        quoted = json.loads(line[line.index(": \"") + 2:].replace("\\u2028", "\u2028"))
        original = next(c.entry.entry.text for c in found
                        if (c.scope, c.entry.citation) == (item.scope, item.citation))
        if item.truncated:
            assert quoted.endswith("…") and original.startswith(quoted[:-1]) and len(quoted) < len(original) + 1
            assert len(quoted[:-1].encode()) <= MAX_ITEM_TEXT_BYTES
        else:
            assert quoted == original


def test_duplicates_are_left_out_and_say_which_item_they_repeat():
    found = [_candidate("s", "city", "Ana lives in Porto."), _candidate("s", "city", "Ana lives in Porto.", source="recent"),
             _candidate("s", "copy", "ANA lives in  porto."), _candidate("t", "city", "Another scope, same id.")]
    text, items, omitted = pack(found, 8000)
    assert [(i.scope, i.citation.entry_id) for i in items] == [("s", "city"), ("t", "city")]
    assert [(o.citation.entry_id, o.reason, o.duplicate_of) for o in omitted] == [
        ("city", "duplicate", 1), ("copy", "duplicate", 1)]
    assert text.splitlines()[1] == '[1] s/city v1 (fact, 2026-01-02): "Ana lives in Porto."'


def test_a_line_that_does_not_fit_is_cut_or_left_out():
    long = "word " * 400  # 2,000 bytes
    found = [_candidate("s", "a", "short"), _candidate("s", "b", long.strip()), _candidate("s", "c", "tail")]
    text, items, omitted = pack(found, 300)
    assert [i.citation.entry_id for i in items] == ["a", "b"] and items[1].truncated
    assert [(o.citation.entry_id, o.reason) for o in omitted] == [("c", "budget")] and omitted[0].bytes > 0
    assert len(text.encode()) <= 300


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("context") / "context.duckdb"
    with pcmem.open(path, embedder=None) as runtime:
        project = runtime.memory.for_scope("project")
        project.remember(pcmem.RememberRequest(entries=tuple(
            pcmem.NewEntry(entry_id=f"note-{i:02d}", text=f"Deploy note {i}: " + "the release checklist " * (i % 7)
                           + "中文" * (i % 3)) for i in range(40))))
        for i in range(30):  # one revision each: recent entries are read from the latest revisions back
            project.remember(f"Deploy step {i} is done.", entry_id=f"step-{i:02d}")
        project.retire("step-29", expected_version=1)
        project.forget("step-28")
        runtime.memory.for_scope("user:ana").remember("Ana owns the deploy checklist.", entry_id="owner")
    return path


@settings(max_examples=40, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(max_bytes=st.integers(256, 12_000), max_tokens=st.none() | st.integers(64, 4000),
       relevant=st.integers(0, 50), recent=st.integers(0, 50), query=st.sampled_from(["deploy checklist", None]))
def test_the_library_block_stays_within_bytes_and_tokens(store, max_bytes, max_tokens, relevant, recent, query):
    if (query is None or relevant == 0) and recent == 0:
        relevant, recent = 0, 1
    with pcmem.open(store, embedder=None) as runtime:
        block = runtime.memory.context(query, scopes=["project", "user:ana"], max_bytes=max_bytes,
                                       max_tokens=max_tokens, relevant=relevant, recent=recent, explain=True)
    assert block.bytes == len(block.text.encode()) <= max_bytes
    assert block.tokens == estimate_tokens(block.text)
    if max_tokens is not None:
        assert block.tokens <= max_tokens
    assert all(item.citation.entry_id not in ("step-29", "step-28") for item in block.items), "active only"


def test_recent_entries_newest_first_across_scopes_and_windows(store):
    with pcmem.open(store, embedder=None) as runtime:
        page = runtime.memory.recent(scopes=["project", "user:ana"], limit=20)
        ids = [item.entry.entry.entry_id for item in page.entries]
        assert ids[0] == "owner" and ids[1:4] == ["step-27", "step-26", "step-25"], "retired and forgotten left out"
        assert [item.written_at for item in page.entries] == sorted((i.written_at for i in page.entries),
                                                                    reverse=True)
        deep = runtime.memory.for_scope("project").recent(limit=100).entries
        assert len(deep) == 40 + 28 and deep[-1].entry.entry.entry_id == "note-39", "past the first windows"
        since = page.entries[5].written_at
        later = runtime.memory.recent(scopes=["project", "user:ana"], since=since).entries
        assert all(item.written_at >= since for item in later) and len(later) == 6
        assert runtime.memory.for_scope("nobody").recent().entries == ()
        future = datetime.now(UTC) + timedelta(days=1)
        assert runtime.memory.for_scope("project").recent(since=future).entries == ()


def test_recent_reads_the_latest_revisions_not_the_whole_scope(store, monkeypatch):
    windows: list[int] = []
    original = recent_module._newest_writes

    def spy(backend, memory, start, since):  # noqa: ANN001, ANN202
        windows.append(memory.revision - start)
        return original(backend, memory, start, since)

    monkeypatch.setattr(recent_module, "_newest_writes", spy)
    with pcmem.open(store, embedder=None) as runtime:
        runtime.memory.for_scope("project").recent(limit=3)
    assert windows == [recent_module.FIRST_WINDOW], "three entries need one window of the latest revisions"


def test_one_calling_convention_and_the_same_block_everywhere(store, tmp_path):
    with pcmem.open(store, embedder=None) as runtime:
        project = runtime.memory.for_scope("project")
        by_keywords = project.context("release checklist", max_bytes=900, recent=2)
        by_request = project.context(ContextRequest(query="release checklist", max_bytes=900, recent=2))
        assert by_keywords == by_request and by_keywords.bytes <= 900 and by_keywords.mode == "fts"
        with pytest.raises(InputError, match="go into the ContextRequest"):
            project.context(ContextRequest(query="x"), max_bytes=900)
        with pytest.raises(InputError, match="needs a query"):
            project.context(None, recent=0)
        with pytest.raises(InputError):
            project.context("x", max_bytes="900")  # type: ignore[arg-type]

    async def from_asyncio() -> pcmem.ContextBlock:
        async with pcmem.open_async(store, embedder=None) as runtime:
            return await runtime.memory.for_scope("project").context("release checklist", max_bytes=900, recent=2)

    assert asyncio.run(from_asyncio()) == by_keywords


def test_pcmem_context_prints_the_block_as_is(store):
    from click.testing import CliRunner

    from pcmem.cli import main

    args = ["--db", str(store), "context", "--scope", "project", "--scope", "user:ana", "--max-tokens", "100"]
    shown = CliRunner().invoke(main, [*args, "--explain", "deploy checklist"])
    assert shown.exit_code == 0, shown.output
    assert shown.stdout.startswith(HEADER) and len(shown.stdout.encode()) <= 300 + 1  # the block and a newline
    assert "left out:" in shown.stderr and "over the budget" in shown.stderr
    block = json.loads(CliRunner().invoke(main, [*args, "--json", "deploy checklist"]).stdout)
    assert block["text"] == shown.stdout.rstrip("\n") and block["tokens"] <= 100 and block["omitted"] == []


def test_the_token_estimate_counts_at_least_what_a_subword_tokenizer_counts(store):
    """estimate_tokens against the MiniLM WordPiece tokenizer that ships with pcmem, on what a budget holds: context
    blocks (generated entry ids tokenize poorly), English prose, JSON, CJK text (bytes / 3 under-counted the first)."""
    from pathlib import Path

    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(Path(pcmem.__file__).parent / "embedding" / "data"
                                        / "all-MiniLM-L6-v2-tokenizer.json"))
    tokenizer.no_truncation()
    with pcmem.open(store, embedder=None) as runtime:
        blocks = [runtime.memory.context(query, scopes=["project", "user:ana"], relevant=40, recent=20).text
                  for query in ("deploy checklist", "release", None)]
    docs = "\n".join(page.read_text(encoding="utf-8") for page in pages())  # README.md and the site's pages
    samples = [*blocks, docs[:20_000], docs[-20_000:], "中文的记忆系统可以存储用户的偏好和决定。日本語のテキストも検索できます。" * 5]
    for sample in samples:
        counted = len(tokenizer.encode(sample, add_special_tokens=False).ids)
        assert counted <= estimate_tokens(sample) <= 1.5 * counted, (estimate_tokens(sample), counted)
    # Short fragments of words (a JSON document of ids and keys) are where WordPiece splits most: a little under.
    dense = json.dumps({"scope_id": "user:ana", "limit": 5, "ids": ["ent_01m90x"] * 9})
    assert estimate_tokens(dense) >= 0.95 * len(tokenizer.encode(dense, add_special_tokens=False).ids)
