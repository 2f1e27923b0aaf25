"""The terminal UI, driven through Textual's Pilot on real DuckDB stores.

The store is the real thing (a seeded file copied per test, a frozen clock, ``embedder=None``: these tests are about
the UI, not vectors). The reranker is a scripted in-process ``MemoryReranker``: what is under test is how the trace
is shown, not a model. Screens at 80×24 are compared as SVG snapshots under ``snapshots/test_tui/`` with the random
artifact and version ids masked.
"""

from __future__ import annotations

import ast
import json
import re
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.text import Text
from syrupy.extensions.image import SVGImageSnapshotExtension
from textual.pilot import Pilot
from textual.widgets import DataTable, Input, Select, Static, TextArea

import pcmem
from pcmem import NewEntry, RememberRequest
from pcmem.cli import main
from pcmem.cli.demo_command import seed_demo
from pcmem.types.rerank import MemoryRerankDecision
from pcmem.types.usage import Usage
from pcmem_tui.app import PcmemApp, make_app
from pcmem_tui.screens.dialogs import ConfirmScreen, RememberScreen, RevisionScreen
from pcmem_tui.screens.entries import EntriesScreen
from pcmem_tui.screens.entry import EntryScreen
from pcmem_tui.screens.help import HelpScreen
from pcmem_tui.screens.scopes import ScopesScreen
from pcmem_tui.screens.search import SearchScreen
from pcmem_tui.screens.trace import TraceScreen
from pcmem_tui.widgets import StatusLine

ROOT = Path(__file__).resolve().parent.parent
SNAPSHOT_SIZE = (80, 24)
SIZE = (100, 30)


class RootSVGExtension(SVGImageSnapshotExtension):
    """SVG screenshots in the top-level ``snapshots/<test module>/`` folder, like the amber snapshots."""

    @classmethod
    def dirname(cls, *, test_location) -> str:  # type: ignore[override]
        return str(ROOT / "snapshots" / Path(test_location.filepath).stem)


@pytest.fixture
def svg_snapshot(snapshot):
    return snapshot.use_extension(RootSVGExtension)


@pytest.fixture(autouse=True)
def _no_model_from_the_environment(monkeypatch):
    """A developer's POWERCONTEXT_* variables must not change which rerank policies the UI offers."""
    for name in ("POWERCONTEXT_SERVER_INFERENCE_GENERATION_MODEL", "POWERCONTEXT_SERVER_RUNTIME_MEMORY_RERANK_ENABLED"):
        monkeypatch.delenv(name, raising=False)


class FrozenClock:
    """Each call is one second after the previous one, from 2026-01-01 UTC."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


class ScriptedReranker:
    """A MemoryReranker that picks fixed coarse ranks and reports per-candidate progress like the decision policy."""

    policy_id = "test.scripted.v1"

    def __init__(self, ranks: tuple[int, ...] = (3, 1), discarded: int = 1) -> None:
        self.ranks, self.discarded = ranks, discarded

    def rerank(self, query, candidates, limit, progress=None):  # noqa: ANN001, ANN201 - the port's signature
        for done in range(1, len(candidates) + 1):
            if progress:
                progress(done, len(candidates))
        return MemoryRerankDecision(selected_ranks=tuple(r for r in self.ranks if r <= len(candidates))[:limit],
                                    usage=Usage(requests=len(candidates), input_tokens=640, output_tokens=7),
                                    discarded_rank_count=self.discarded, decision_calls=len(candidates))


# --- stores -------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def seeded_template(tmp_path_factory) -> Path:
    """The demo scope (3 revisions: remember 18, revise release-day, retire sync-later) plus a small 'notes' scope."""
    path = tmp_path_factory.mktemp("template") / "memory.duckdb"
    with pcmem.open_sync(path, embedder=None, clock=FrozenClock()) as runtime:
        seed_demo(runtime.memory.for_scope("pcmem-demo"))
        runtime.memory.for_scope("notes").remember(RememberRequest(entries=(
            NewEntry(entry_id="n1", text="Buy oolong tea for Marco."),
            NewEntry(entry_id="n2", text="Book the Porto venue.", kind="todo"),
        )))
    return path


@pytest.fixture
def store_path(seeded_template: Path, tmp_path: Path) -> Path:
    path = tmp_path / "memory.duckdb"
    shutil.copy(seeded_template, path)
    return path


def open_store(path: Path, **options) -> pcmem.SyncRuntime:
    return pcmem.open_sync(path, embedder=None, clock=FrozenClock(), **options)


@pytest.fixture
def runtime(store_path: Path) -> Iterator[pcmem.SyncRuntime]:
    with open_store(store_path) as opened:
        yield opened


@pytest.fixture
def app(runtime) -> PcmemApp:
    return make_app(runtime)


# --- helpers ------------------------------------------------------------------------------------------------------


async def settle(pilot: Pilot) -> None:
    """Let thread workers finish and the messages they posted be handled (which may start more workers)."""
    await pilot.pause()
    while any(worker.is_running for worker in pilot.app.workers):
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()


def rows(table: DataTable) -> list[list[str]]:
    return [[str(cell) for cell in table.get_row(row.key)] for row in table.ordered_rows]


def row_keys(table: DataTable) -> list[str]:
    return [str(row.key.value) for row in table.ordered_rows]


def text_of(app: PcmemApp, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).render())


def status(app: PcmemApp) -> str:
    return app.screen.query_one(StatusLine).message


async def open_scope(pilot: Pilot, scope: str = "pcmem-demo") -> EntriesScreen:
    await settle(pilot)
    table = pilot.app.screen.query_one(DataTable)
    table.move_cursor(row=row_keys(table).index(scope))
    await pilot.press("enter")
    await settle(pilot)
    assert isinstance(pilot.app.screen, EntriesScreen)
    return pilot.app.screen


async def open_entry(pilot: Pilot, entry_id: str) -> EntryScreen:
    table = pilot.app.screen.query_one(DataTable)
    table.move_cursor(row=row_keys(table).index(entry_id))
    await pilot.press("enter")
    await settle(pilot)
    assert isinstance(pilot.app.screen, EntryScreen)
    return pilot.app.screen


async def search(pilot: Pilot, query: str, *, mode: str = "fts", limit: str = "10", policy: str | None = None) -> None:
    screen = pilot.app.screen
    assert isinstance(screen, SearchScreen)
    screen.query_one("#mode", Select).value = mode
    screen.query_one("#limit", Input).value = limit
    if policy is not None:
        screen.query_one("#rerank", Select).value = policy
    screen.query_one("#query", Input).value = query
    screen.query_one("#query", Input).focus()
    await pilot.press("enter")
    await settle(pilot)


IDS = re.compile(r"\b(mem|ver)_[0-9a-z]{26}\b")
LATENCY = re.compile(r"latency \d+ ms")
SVG_UNIQUE_ID = re.compile(r"terminal-\d+")


def _masked(text: Text) -> Text:
    masked = text.copy()
    # Same-length masks keep every style span in place (and wrap the text exactly where the real ids wrap).
    masked.plain = LATENCY.sub("latency N ms", IDS.sub(lambda m: f"{m.group(1)}_{'x' * 26}", text.plain))
    return masked


async def screenshot(pilot: Pilot) -> str:
    """The SVG with what differs between runs masked before rendering: random artifact/version ids, latency."""
    for widget in pilot.app.screen.query(Static):
        if isinstance(widget.content, Text) and (IDS.search(widget.content.plain) or "latency" in widget.content.plain):
            widget.update(_masked(widget.content))
    await pilot.pause()
    return SVG_UNIQUE_ID.sub("terminal", pilot.app.export_screenshot(title="pcmem"))  # rich hashes the content


# --- scopes and entries -------------------------------------------------------------------------------------------


async def test_scopes_screen_lists_every_scope_with_counts(app):
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, ScopesScreen)
        assert rows(app.screen.query_one(DataTable)) == [
            ["notes", "2", "0", "1", "2026-01-01 00:00:04"],
            ["pcmem-demo", "17", "1", "3", "2026-01-01 00:00:03"],
        ]
        assert text_of(app, "#title") == "2 scopes"
        await pilot.click(DataTable, offset=(3, 2))  # the mouse works too: click pcmem-demo, click again to open
        await pilot.click(DataTable, offset=(3, 2))
        await settle(pilot)
        assert isinstance(app.screen, EntriesScreen) and app.screen.scope == "pcmem-demo"


async def test_entries_screen_shows_the_head_manifest_and_hides_retired_on_request(app):
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_scope(pilot)
        table = screen.query_one(DataTable)
        assert len(table.rows) == 18
        assert rows(table)[row_keys(table).index("release-day")][:4] == ["release-day", "decision", "v2", "active"]
        assert rows(table)[row_keys(table).index("sync-later")][3] == "retired"
        assert "revision 3 of 3" in text_of(app, "#title")
        await pilot.press("a")
        await settle(pilot)
        assert len(table.rows) == 17 and "sync-later" not in row_keys(table)


async def test_entry_screen_shows_text_citation_history_and_a_word_diff(app, runtime):
    async with app.run_test(size=SIZE) as pilot:
        await open_scope(pilot)
        screen = await open_entry(pilot, "release-day")
        head = runtime.memory.for_scope("pcmem-demo").get_entry("release-day")
        assert "moved from Thursdays" in text_of(app, "#entry-text")
        assert str(head.citation) in text_of(app, "#entry-meta")
        history = screen.query_one("#history", DataTable)
        assert [row[:4] for row in rows(history)] == [["r1", "remember", "active", "v1"], ["r2", "revise", "active", "v2"]]
        assert "on [-Thursdays-]{+Tuesdays+} after" in text_of(app, "#diff")
        await pilot.press("up")  # the first version has nothing before it
        assert "first version (v1)" in text_of(app, "#diff")


async def test_retire_shows_as_a_state_change_in_the_history(app):
    async with app.run_test(size=SIZE) as pilot:
        await open_scope(pilot)
        await open_entry(pilot, "sync-later")
        assert "r3 retire: state active → retired; text unchanged" in text_of(app, "#diff")


async def test_browsing_a_past_revision_lists_its_manifest_read_only(app):
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_scope(pilot)
        await pilot.press("v")
        await settle(pilot)
        assert isinstance(app.screen, RevisionScreen)
        await pilot.press("down", "down", "enter")  # newest first: r3, r2, r1
        await settle(pilot)
        table = screen.query_one(DataTable)
        assert screen.manifest.revision == 1 and not screen.manifest.is_head
        assert rows(table)[row_keys(table).index("release-day")][2] == "v1"
        assert rows(table)[row_keys(table).index("sync-later")][3] == "active"
        assert "◷ past · read-only" in text_of(app, "#title")
        assert screen.check_action("retire", ()) is False and screen.check_action("step", (-1,)) is False
        await pilot.press("right_square_bracket")
        await settle(pilot)
        assert screen.manifest.revision == 2
        await pilot.press("h")
        await settle(pilot)
        assert screen.manifest.is_head and screen.revision is None


async def test_opening_an_entry_of_a_past_revision_shows_that_version(app):
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_scope(pilot)
        await pilot.press("left_square_bracket", "left_square_bracket")
        await settle(pilot)
        assert screen.manifest.revision == 1
        await open_entry(pilot, "release-day")
        assert "on Thursdays after" in text_of(app, "#entry-text")
        assert "v1 · active · as of revision 1" in text_of(app, "#entry-head")


# --- writes -------------------------------------------------------------------------------------------------------


async def test_remember_writes_a_new_revision_at_the_head(app, runtime):
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_scope(pilot, "notes")
        await pilot.press("n")
        assert isinstance(app.screen, RememberScreen)
        app.screen.query_one(TextArea).text = "The venue deposit is due in March."
        app.screen.query_one("#kind", Input).value = "todo"
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert screen.manifest.revision == 2 and len(screen.query_one(DataTable).rows) == 3
        assert status(app) == "remembered 1 entry → revision 2"
        texts = [e.entry.text for e in runtime.memory.for_scope("notes").list().entries]
        assert "The venue deposit is due in March." in texts


async def test_remember_dialog_shows_validation_errors_without_writing(app):
    async with app.run_test(size=SIZE) as pilot:
        await open_scope(pilot, "notes")
        await pilot.press("n")
        app.screen.query_one("#kind", Input).value = "  "
        app.screen.query_one(TextArea).text = "text"
        await pilot.press("ctrl+s")
        assert isinstance(app.screen, RememberScreen)
        assert text_of(app, "#dialog-error").startswith("✗ kind must be 1..")


async def test_retire_asks_first_and_cancel_writes_nothing(app, runtime):
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_scope(pilot, "notes")
        await pilot.press("d")
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")
        await settle(pilot)
        assert runtime.memory.for_scope("notes").head().revision == 1
        await pilot.press("d")
        await pilot.press("y")
        await settle(pilot)
        assert screen.manifest.revision == 2
        assert rows(screen.query_one(DataTable))[0][3] == "retired"
        assert status(app) == "retired 'n1' → revision 2"


# --- search and trace ---------------------------------------------------------------------------------------------


async def test_search_shows_ranked_hits_with_citation_and_opens_the_cited_entry(app):
    async with app.run_test(size=SIZE) as pilot:
        await open_scope(pilot)
        await pilot.press("slash")
        screen = app.screen
        assert isinstance(screen, SearchScreen)
        # no model configured: only the model-free embedding policy besides none
        assert app.session.policies() == ["none", "embedding"]
        await search(pilot, "release thursdays")
        table = screen.query_one("#hits", DataTable)
        hits = screen.page.hits
        assert {hit.citation.entry_id for hit in hits} == {"release-day", "release-owner"}
        assert [row[:4] for row in rows(table)] == [
            [str(rank), f"{hit.score:.4f}", "fts", hit.kind] for rank, hit in enumerate(hits, 1)]
        assert hits[0].text.startswith(rows(table)[0][4].removesuffix("…"))
        assert str(hits[0].citation) in text_of(app, "#hit-detail")
        assert status(app) == "2 hits · mode fts · revision 3"
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, EntryScreen) and app.screen.entry_id == hits[0].citation.entry_id


async def test_bad_searches_show_readable_errors(app):
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("slash")
        for query, mode, limit, message in [("", "fts", "10", "query"),  # InputError
                                            ("release day", "vector", "10", "vector"),  # no embedder: capability
                                            ("release day", "fts", "", "limit")]:  # InputError from pydantic
            await search(pilot, query, mode=mode, limit=limit)
            assert isinstance(app.screen, SearchScreen) and app.screen.page is None
            assert status(app).startswith("✗ ") and message in status(app)
            assert "Traceback" not in status(app)
            assert app._notifications and list(app._notifications)[-1].message == status(app)[2:]


async def test_trace_inspector_shows_picks_in_model_order_and_dropped_candidates(store_path):
    with open_store(store_path, reranker=ScriptedReranker(ranks=(3, 1))) as runtime:
        app = make_app(runtime)
        async with app.run_test(size=SIZE) as pilot:
            await open_scope(pilot)
            await pilot.press("slash")
            screen = app.screen
            assert screen.query_one("#rerank", Select).value == "configured"
            await search(pilot, "Marco Priya", limit="3")
            trace = screen.page.rerank
            assert len(trace.candidates) >= 4
            assert [row[:2] for row in rows(screen.query_one("#hits", DataTable))] == [["1", "3"], ["2", "1"]]
            assert str(screen.query_one("#progress-stage").render()) == f"reranking {len(trace.candidates)}/{len(trace.candidates)}"
            assert not screen.query_one("WorkProgress").display
            await pilot.press("t")
            assert isinstance(app.screen, TraceScreen)
            table = app.screen.query_one(DataTable)
            assert [row[:3] for row in rows(table)] == [["1", "3", "✓ kept"], ["2", "1", "✓ kept"]] + [
                ["", str(rank), "✗ dropped"] for rank in trace.dropped_ranks]
            summary = text_of(app, "#trace-summary")
            assert "policy test.scripted.v1" in summary
            assert f"kept 2 of {len(trace.candidates)} · dropped {len(trace.candidates) - 2}" in summary
            assert "discarded ranks 1 · fallback no" in summary
            n = len(trace.candidates)
            assert f"{n} requests · 640 in + 7 out tokens · {n} decision calls" in summary


async def test_model_policies_are_offered_with_a_model_and_a_load_failure_is_readable(runtime, tmp_path):
    app = make_app(runtime, model=f"llama-cpp:{tmp_path / 'missing.gguf'}")
    async with app.run_test(size=SIZE) as pilot:
        await open_scope(pilot)
        await pilot.press("slash")
        select = app.screen.query_one("#rerank", Select)
        assert not select.disabled
        assert [value for _, value in select._options] == ["none", "embedding", "listwise", "decision", "decision-fill"]
        await search(pilot, "Marco Priya", policy="decision")
        assert status(app).startswith("✗ ") and "missing.gguf" in status(app)
        assert not app.screen.query_one("WorkProgress").display


# --- app shell ----------------------------------------------------------------------------------------------------


async def test_help_screen_lists_the_keys_of_every_screen(app):
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        keys = text_of(app, "#help-keys")
        for description in ("Revision…", "Older", "Trace", "Copy citation", "Remember", "Retire"):
            assert description in keys
        await pilot.press("escape")
        assert isinstance(app.screen, ScopesScreen)


async def test_the_app_opens_a_store_path_itself(store_path):
    app = make_app(store_path, embedder=None)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, ScopesScreen)
        assert row_keys(app.screen.query_one(DataTable)) == ["notes", "pcmem-demo"]


async def test_a_file_that_is_not_a_store_shows_an_error_instead_of_a_traceback(tmp_path):
    path = tmp_path / "not-a-store.duckdb"
    path.write_text("hello")
    app = make_app(path, embedder=None)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.session is None
        assert text_of(app, "#opening").startswith(f"✗ cannot open {path}")


def test_cli_tui_opens_the_app_on_the_resolved_store(monkeypatch, tmp_path):
    opened = {}

    class FakeApp:
        def run(self) -> None:
            opened["ran"] = True

    def fake_make_app(source, **options):
        opened.update(source=source, **options)
        return FakeApp()

    monkeypatch.setattr("pcmem_tui.app.make_app", fake_make_app)
    monkeypatch.setattr("pcmem.cli.tui_command._has_terminal", lambda: True)  # CliRunner's streams are not TTYs
    args = ["--db", str(tmp_path / "x.duckdb"), "tui", "--model", "llama-cpp:tiny"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert opened.pop("inference").generation_model == "llama-cpp:tiny"
    assert opened == {"source": tmp_path / "x.duckdb", "ran": True}
    described = CliRunner().invoke(main, [*args, "--json"])
    assert json.loads(described.stdout) == {"db": str(tmp_path / "x.duckdb"), "model": "llama-cpp:tiny",
                                            "embedder": "auto"}
    assert not (tmp_path / "x.duckdb").exists()


def test_tui_uses_only_the_public_api_of_pcmem():
    """STYLE §8, checked mechanically: the TUI imports pcmem's root names and nothing below them."""
    allowed_modules = {"pcmem"}
    for path in sorted((ROOT / "tui").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "pcmem":
                assert node.module in allowed_modules, f"{path.name} imports {node.module}"
                if node.module == "pcmem":
                    assert {alias.name for alias in node.names} <= set(pcmem.__all__), path.name
            if isinstance(node, ast.Import):
                for alias in node.names:
                    assert alias.name.split(".")[0] != "pcmem" or alias.name in allowed_modules, path.name


# --- snapshots at 80×24 -------------------------------------------------------------------------------------------


async def test_snapshot_scopes(app, svg_snapshot):
    async with app.run_test(size=SNAPSHOT_SIZE) as pilot:
        await settle(pilot)
        assert await screenshot(pilot) == svg_snapshot


async def test_snapshot_entries(app, svg_snapshot):
    async with app.run_test(size=SNAPSHOT_SIZE) as pilot:
        await open_scope(pilot)
        assert await screenshot(pilot) == svg_snapshot


async def test_snapshot_past_revision(app, svg_snapshot):
    async with app.run_test(size=SNAPSHOT_SIZE) as pilot:
        await open_scope(pilot)
        await pilot.press("left_square_bracket", "left_square_bracket")
        await settle(pilot)
        assert await screenshot(pilot) == svg_snapshot


async def test_snapshot_entry(app, svg_snapshot):
    async with app.run_test(size=SNAPSHOT_SIZE) as pilot:
        await open_scope(pilot)
        await open_entry(pilot, "release-day")
        assert await screenshot(pilot) == svg_snapshot


async def test_snapshot_search(app, svg_snapshot):
    async with app.run_test(size=SNAPSHOT_SIZE) as pilot:
        await open_scope(pilot)
        await pilot.press("slash")
        await search(pilot, "Marco Priya")
        assert await screenshot(pilot) == svg_snapshot


async def test_snapshot_trace(store_path, svg_snapshot):
    with open_store(store_path, reranker=ScriptedReranker(ranks=(3, 1))) as runtime:
        app = make_app(runtime)
        async with app.run_test(size=SNAPSHOT_SIZE) as pilot:
            await open_scope(pilot)
            await pilot.press("slash")
            await search(pilot, "Marco Priya", limit="3")
            await pilot.press("t")
            await settle(pilot)
            assert await screenshot(pilot) == svg_snapshot


async def test_snapshot_help(app, svg_snapshot):
    async with app.run_test(size=SNAPSHOT_SIZE) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)
        assert await screenshot(pilot) == svg_snapshot
