"""The terminal UI, driven through Textual's Pilot on real DuckDB stores.

The store is the real thing (a seeded file copied per test, a frozen clock, ``embedder=None``: these tests are about
the UI, not vectors). The reranker is a scripted in-process ``MemoryReranker``: what is under test is how the trace
is shown, not a model. Screens at 80×24 and 120×36 are compared as SVG snapshots under ``snapshots/test_tui/`` with
the random artifact and version ids masked.
"""

from __future__ import annotations

import ast
import json

import pytest
from click.testing import CliRunner
from textual.widgets import Input, Select, TextArea
from tui_pilot import (
    ROOT,
    SIZE,
    SIZE_IDS,
    SNAPSHOT_SIZE,
    SNAPSHOT_SIZES,
    ScriptedReranker,
    drawn,
    open_entry,
    open_scope,
    open_store,
    row_keys,
    rows,
    screenshot,
    search,
    settle,
    status,
    text_of,
)

import pcmem
from pcmem import NewEntry, RememberRequest
from pcmem.cli import main
from pcmem.types.rerank import MemoryRerankDecision
from pcmem.types.usage import Usage
from pcmem_tui.app import make_app
from pcmem_tui.screens.dialogs import ConfirmScreen, RememberScreen, ReviseScreen
from pcmem_tui.screens.entries import EntriesScreen
from pcmem_tui.screens.entry import EntryScreen
from pcmem_tui.screens.help import HelpScreen
from pcmem_tui.screens.revisions import RevisionScreen
from pcmem_tui.screens.scopes import ScopesScreen
from pcmem_tui.screens.search import SearchScreen
from pcmem_tui.screens.trace import TraceScreen
from pcmem_tui.table import ListTable


async def test_scopes_screen_lists_every_scope_with_counts(app):
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, ScopesScreen)
        assert rows(app.screen.query_one(ListTable)) == [
            ["notes", "2", "0", "1", "2026-01-01 00:00:04"],
            ["pcmem-demo", "17", "1", "3", "2026-01-01 00:00:03"],
        ]
        assert text_of(app, "#title") == "2 scopes"
        await pilot.click(ListTable, offset=(3, 2))  # the mouse works too: click pcmem-demo, click again to open
        await pilot.click(ListTable, offset=(3, 2))
        await settle(pilot)
        assert isinstance(app.screen, EntriesScreen) and app.screen.scope == "pcmem-demo"


async def test_entries_screen_shows_the_head_manifest_and_hides_retired_on_request(app):
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_scope(pilot)
        table = screen.query_one(ListTable)
        assert table.row_count == 18
        assert rows(table)[row_keys(table).index("release-day")][1:] == ["decision", "v2", "active", "release-day"]
        assert rows(table)[row_keys(table).index("sync-later")][3] == "retired"
        assert "revision 3 of 3" in text_of(app, "#title")
        await pilot.press("a")
        await settle(pilot)
        assert table.row_count == 17 and "sync-later" not in row_keys(table)


async def test_entry_screen_shows_text_citation_history_and_a_word_diff(app, runtime):
    async with app.run_test(size=SIZE) as pilot:
        await open_scope(pilot)
        screen = await open_entry(pilot, "release-day")
        head = runtime.memory.for_scope("pcmem-demo").get_entry("release-day")
        assert "moved from Thursdays" in text_of(app, "#entry-text")
        assert str(head.citation) in text_of(app, "#entry-meta")
        history = screen.query_one("#history", ListTable)
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
        table = screen.query_one(ListTable)
        assert screen.manifest.revision == 1 and not screen.manifest.is_head
        assert rows(table)[row_keys(table).index("release-day")][2] == "v1"
        assert rows(table)[row_keys(table).index("sync-later")][3] == "active"
        assert "◷ past · read-only" in text_of(app, "#title")
        assert screen.check_action("step", (-1,)) is False
        for key, verb in (("d", "retire"), ("n", "remember"), ("u", "reactivate")):  # issue 19.8: say why, not nothing
            await pilot.press(key)
            assert isinstance(app.screen, EntriesScreen)
            assert "past revision and read-only" in status(app) and f"to {verb}" in status(app)
        await pilot.press("S")
        assert isinstance(app.screen, SearchScreen) and "search reads the head (r3)" in status(app)
        await pilot.press("escape")
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
        assert screen.manifest.revision == 2 and screen.query_one(ListTable).row_count == 3
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
        assert rows(screen.query_one(ListTable))[0][3] == "retired"
        assert status(app) == "retired 'n1' → revision 2"


# --- search and trace ---------------------------------------------------------------------------------------------


async def test_search_shows_ranked_hits_with_citation_and_opens_the_cited_entry(app):
    async with app.run_test(size=SIZE) as pilot:
        await open_scope(pilot)
        await pilot.press("S")
        screen = app.screen
        assert isinstance(screen, SearchScreen)
        # no model configured: only the model-free embedding policy besides none
        assert app.session.policies() == ["none", "embedding"]
        await search(pilot, "release thursdays")
        table = screen.query_one("#hits", ListTable)
        hits = screen.page.hits
        assert {hit.citation.entry_id for hit in hits} == {"release-day", "release-owner"}
        # in fts mode the list is in BM25 order: its column shows BM25 (#45.7), not the fused 1/(60 + rank)
        assert table.columns[1][0] == "bm25"
        assert [row[:4] for row in rows(table)] == [
            [str(rank), f"{hit.channels['fts'][1]:.3f}", f"fts#{rank}", hit.kind] for rank, hit in enumerate(hits, 1)]
        assert hits[0].text.startswith(rows(table)[0][4].removesuffix("…"))
        assert str(hits[0].citation) in text_of(app, "#hit-detail")
        assert status(app) == "2 hits · mode fts · revision 3"
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, EntryScreen) and app.screen.entry_id == hits[0].citation.entry_id


async def test_bad_searches_show_readable_errors(app):
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("S")
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
            await pilot.press("S")
            screen = app.screen
            assert screen.query_one("#rerank", Select).value == "configured"
            await search(pilot, "Marco Priya", limit="3")
            trace = screen.page.rerank
            assert len(trace.candidates) >= 4
            assert [row[:2] for row in rows(screen.query_one("#hits", ListTable))] == [["1", "3"], ["2", "1"]]
            assert str(screen.query_one("#progress-stage").render()) == f"reranking {len(trace.candidates)}/{len(trace.candidates)}"
            assert not screen.query_one("WorkProgress").display
            await pilot.press("t")
            assert isinstance(app.screen, TraceScreen)
            table = app.screen.query_one(ListTable)
            assert [row[:3] for row in rows(table)] == [["1", "3", "✓ kept"], ["2", "1", "✓ kept"]] + [
                ["", str(rank), "✗ dropped"] for rank in trace.dropped_ranks]
            summary = text_of(app, "#trace-summary")
            assert "policy test.scripted.v1" in summary
            assert f"kept 2 of {len(trace.candidates)} · dropped {len(trace.candidates) - 2}" in summary
            assert "discarded ranks 1" in summary and "fallback" not in summary
            n = len(trace.candidates)
            assert f"{n} requests · 640 in + 7 out tokens · {n} decision calls" in summary


async def test_model_policies_are_offered_with_a_model_and_a_load_failure_is_readable(runtime, tmp_path):
    app = make_app(runtime, model=f"llama-cpp:{tmp_path / 'missing.gguf'}")
    async with app.run_test(size=SIZE) as pilot:
        await open_scope(pilot)
        await pilot.press("S")
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
        assert row_keys(app.screen.query_one(ListTable)) == ["notes", "pcmem-demo"]


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
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", "vim -n")  # the app gets the editor from pcmem's settings
    args = ["--db", str(tmp_path / "x.duckdb"), "tui", "--model", "llama-cpp:tiny"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert opened.pop("inference").generation_model == "llama-cpp:tiny"
    assert opened == {"source": tmp_path / "x.duckdb", "editor": "vim -n", "ran": True}
    described = CliRunner().invoke(main, [*args, "--json"])
    assert json.loads(described.stdout) == {"db": str(tmp_path / "x.duckdb"), "model": "llama-cpp:tiny",
                                            "embedder": "auto"}
    assert not (tmp_path / "x.duckdb").exists()


async def test_first_run_on_a_new_path_creates_the_store_and_shows_the_empty_scopes_screen(tmp_path):
    """Issue 19.1: a new default store (in a folder that does not exist yet) opens; no traceback."""
    path = tmp_path / "new" / "memory.duckdb"
    app = make_app(path, embedder=None)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, ScopesScreen) and not path.parent.exists()  # #32.7: created by the first write
        assert text_of(app, "#title").startswith(f"No store at {path} yet")
        await pilot.press("n")  # and the first entry can be written right away
        app.screen.query_one("#scope", Input).value = "first"
        app.screen.query_one(TextArea).text = "My first memory."
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert row_keys(app.screen.query_one(ListTable)) == ["first"] and path.exists()


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


@pytest.mark.parametrize("size", SNAPSHOT_SIZES, ids=SIZE_IDS)
async def test_snapshot_scopes(size, app, svg_snapshot):
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        assert await screenshot(pilot) == svg_snapshot


@pytest.mark.parametrize("size", SNAPSHOT_SIZES, ids=SIZE_IDS)
async def test_snapshot_entries(size, app, svg_snapshot):
    async with app.run_test(size=size) as pilot:
        await open_scope(pilot)
        assert await screenshot(pilot) == svg_snapshot


async def test_snapshot_past_revision(app, svg_snapshot):
    async with app.run_test(size=SNAPSHOT_SIZE) as pilot:
        await open_scope(pilot)
        await pilot.press("left_square_bracket", "left_square_bracket")
        await settle(pilot)
        assert await screenshot(pilot) == svg_snapshot


@pytest.mark.parametrize("size", SNAPSHOT_SIZES, ids=SIZE_IDS)
async def test_snapshot_entry(size, app, svg_snapshot):
    """The entry with its change panel (the revise diff) on screen."""
    async with app.run_test(size=size) as pilot:
        await open_scope(pilot)
        await open_entry(pilot, "release-day")
        assert await screenshot(pilot) == svg_snapshot


@pytest.mark.parametrize("size", SNAPSHOT_SIZES, ids=SIZE_IDS)
async def test_snapshot_search(size, app, svg_snapshot):
    async with app.run_test(size=size) as pilot:
        await open_scope(pilot)
        await pilot.press("S")
        await search(pilot, "Marco Priya")
        assert await screenshot(pilot) == svg_snapshot


@pytest.mark.parametrize("size", SNAPSHOT_SIZES, ids=SIZE_IDS)
async def test_snapshot_trace(size, store_path, svg_snapshot):
    with open_store(store_path, reranker=ScriptedReranker(ranks=(3, 1))) as runtime:
        app = make_app(runtime)
        async with app.run_test(size=size) as pilot:
            await open_scope(pilot)
            await pilot.press("S")
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


# --- issue 19: daily use ------------------------------------------------------------------------------------------


async def test_an_outside_write_does_not_fail_a_new_entry_and_keeps_the_text(app, runtime):
    """19.2: a new entry needs no compare-and-swap, so an agent's write meanwhile cannot cost the user's typing."""
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_scope(pilot, "notes")
        await pilot.press("n")
        app.screen.query_one(TextArea).text = "Typed while an agent wrote."
        runtime.memory.for_scope("notes").remember("The agent's note.")  # the head moves under the open dialog
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert app.screen is screen and screen.manifest.revision == 3
        new_id = screen.query_one(ListTable).cursor_key
        assert rows(screen.query_one(ListTable))[screen.query_one(ListTable).cursor_row][0] == "Typed while an agent wrote."
        assert new_id not in ("n1", "n2")  # after n the cursor is on the new entry


async def test_retire_checks_the_entry_and_a_real_conflict_keeps_the_dialog_and_shows_the_change(app, runtime):
    """19.2: another entry's write does not conflict; a write to *this* entry does, and the dialog says how."""
    notes = runtime.memory.for_scope("notes")
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_scope(pilot, "notes")
        screen.query_one(ListTable).move_cursor(row=row_keys(screen.query_one(ListTable)).index("n1"))
        await pilot.press("d")
        notes.remember("Unrelated.")  # another entry: no conflict for n1
        notes.revise(pcmem.ReviseRequest(entry_id="n1", text="Buy sencha tea for Marco.", expected_version=1))
        await pilot.press("y")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        shown = text_of(app, "#dialog-error")
        assert "changed since you opened it: v1 active → v2 active" in shown
        assert "[-oolong-]{+sencha+}" in shown and "Press y to do it anyway" in shown
        await pilot.press("y")  # the user saw the change and retires the new version
        await settle(pilot)
        assert app.screen is screen and notes.get_entry("n1").state == "retired"


async def test_revise_conflict_keeps_the_dialog_open_with_the_typed_text(app, runtime):
    notes = runtime.memory.for_scope("notes")
    async with app.run_test(size=SIZE) as pilot:
        await open_scope(pilot, "notes")
        await open_entry(pilot, "n2")
        await pilot.press("e")
        assert isinstance(app.screen, ReviseScreen)
        app.screen.query_one(TextArea).text = "Book the Porto venue for 40 people."
        notes.revise(pcmem.ReviseRequest(entry_id="n2", text="Book the Lisbon venue.", expected_version=1))
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert isinstance(app.screen, ReviseScreen)
        assert app.screen.query_one(TextArea).text == "Book the Porto venue for 40 people."
        assert "[-Porto-]{+Lisbon+}" in text_of(app, "#dialog-error")
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert isinstance(app.screen, EntryScreen)
        assert notes.get_entry("n2").entry.text == "Book the Porto venue for 40 people."
        assert "revised 'n2' → revision" in status(app)


async def test_an_outside_write_refreshes_the_visible_list_and_keeps_the_cursor(app, runtime):
    """19.3: the app watches the store; the visible screen reloads in place."""
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_scope(pilot)
        table = screen.query_one(ListTable)
        app.watch_store()  # the first look only records the heads
        await settle(pilot)
        table.move_cursor(row=row_keys(table).index("release-owner"))
        runtime.memory.for_scope("pcmem-demo").remember("An agent remembered this meanwhile.")
        app.watch_store()  # what the 1-second timer calls
        await settle(pilot)
        assert table.row_count == 19 and screen.manifest.revision == 4
        assert row_keys(table)[table.cursor_row] == "release-owner"


@pytest.mark.parametrize("width", [60, 80, 140])
async def test_resize_reflows_the_text_column(app, width):
    """19.4: the text column takes the free width; a cut text ends with an ellipsis."""
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await open_scope(pilot)
        await pilot.resize_terminal(width, 30)
        await settle(pilot)
        table = screen.query_one(ListTable)
        room = table.scrollable_content_region.width
        assert sum(table.widths) + 2 * len(table.widths) == room  # every cell padded by one on each side
        longest = max((e.entry.text for e in screen.manifest.entries), key=len)
        line = drawn(table, [row[0] for row in rows(table)].index(longest))
        cut = line[1:1 + table.widths[0]].rstrip()
        assert len(line) == room and cut.endswith("…") and longest.startswith(cut[:-1].rstrip())


async def test_entries_show_text_first_a_short_id_and_creation_order_and_sort_on_request(tmp_path):
    """19.5: generated ids share a prefix within a batch; the list shows their distinguishing end."""
    with open_store(tmp_path / "m.duckdb") as runtime:
        texts = [f"Entry number {i} of one batch." for i in range(6)]
        runtime.memory.for_scope("batch").remember(RememberRequest(entries=tuple(NewEntry(text=t) for t in texts)))
        runtime.memory.for_scope("batch").remember("Written later.")
        app = make_app(runtime)
        async with app.run_test(size=SNAPSHOT_SIZE) as pilot:
            screen = await open_scope(pilot, "batch")
            table = screen.query_one(ListTable)
            shown = rows(table)
            assert shown[-1][0] == "Written later."  # creation order: the later revision last
            ids = [row[4] for row in shown]
            assert len(set(ids)) == len(ids) and all(i.startswith("…") and len(i) == 9 for i in ids)
            await pilot.press("s", "s")  # created → changed → text
            assert "by text" in text_of(app, "#title")
            assert [row[0] for row in rows(table)] == sorted(row[0] for row in shown)


async def test_table_keys_filter_and_contextual_help(app):
    """19.8: j/k, g/G, Home/End; f filters the loaded rows; ? starts with this screen's keys; q goes back."""
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_scope(pilot)
        table = screen.query_one(ListTable)
        await pilot.press("G")
        assert table.cursor_row == table.row_count - 1
        await pilot.press("g", "j", "j", "k")
        assert table.cursor_row == 1
        await pilot.press("end")
        assert table.cursor_row == table.row_count - 1
        await pilot.press("home")
        assert table.cursor_row == 0
        await pilot.press("f")
        await pilot.press(*"tuesdays")
        await settle(pilot)
        assert row_keys(table) == ["release-day"]
        await pilot.press("escape")
        await settle(pilot)
        assert table.row_count == 18
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        assert text_of(app, "#help-keys").startswith("this screen: entries")
        await pilot.press("escape")
        await pilot.press("q")  # from a deeper screen q goes back instead of quitting
        assert isinstance(app.screen, ScopesScreen) and app.is_running


async def test_u_on_an_active_entry_says_why_without_asking(app):
    async with app.run_test(size=SIZE) as pilot:
        await open_scope(pilot, "notes")
        await pilot.press("u")
        assert isinstance(app.screen, EntriesScreen)
        assert status(app) == "✗ 'n1' is already active: nothing to reactivate (d retires it)"


async def test_entry_screen_enter_on_a_history_row_opens_that_version(app):
    """19.6: Enter on a history row opens the entry as of that revision (read-only there)."""
    async with app.run_test(size=SIZE) as pilot:
        await open_scope(pilot)
        await open_entry(pilot, "release-day")
        await pilot.press("k", "enter")
        await settle(pilot)
        assert isinstance(app.screen, EntryScreen) and app.screen.revision == 1
        assert "on Thursdays after" in text_of(app, "#entry-text")
        assert "past · read-only" in text_of(app, "#entry-head")
        await pilot.press("e")
        assert isinstance(app.screen, EntryScreen) and "past version" in status(app)


async def test_copy_citation_says_what_happened_and_offers_a_field(app):
    """19.10: OSC 52 cannot confirm the copy (inside tmux it needs set-clipboard on): no claim of success."""
    async with app.run_test(size=SIZE) as pilot:
        await open_scope(pilot)
        screen = await open_entry(pilot, "release-day")
        await pilot.press("c")
        assert "set-clipboard on" in status(app) and "copied" not in status(app)
        field = screen.query_one("#citation-field", Input)
        assert field.display and field.value == str(screen.detail.entry.citation)


def test_citation_breaks_between_its_parts_never_inside_an_id():
    from pcmem_tui.format import citation_text

    citation = pcmem.Citation(artifact_id="mem_" + "a" * 26, revision=12, entry_id="ent_" + "b" * 26,
                              entry_version_id="ver_" + "c" * 26)
    lines = citation_text(citation, 70).plain.split("\n")
    assert "".join(lines) == str(citation) and all(len(line) <= 70 for line in lines)
    assert len(lines) > 1 and all(any(part in line for line in lines) for part in
                                  (citation.artifact_id, citation.entry_id, citation.entry_version_id))


@pytest.mark.parametrize(("old", "new", "expected"), [
    ("東京の会議は20日に変更されました。", "東京の会議は27日に変更されました。", "東京の会議は[-20-]{+27+}日に変更されました。"),
    ("会議は月曜日です。", "会議は火曜日です。", "会議は[-月-]{+火+}曜日です。"),
    ("Releases go out on Thursdays.", "Releases go out on Tuesdays.", "Releases go out on [-Thursdays-]{+Tuesdays+}."),
    ("The cat sat on the mat.", "Completely different words appear here.",
     "replaced:\n[-The cat sat on the mat.-]\n{+Completely different words appear here.+}"),
])
def test_diff_is_character_level_in_cjk_word_level_otherwise_and_whole_for_a_rewrite(old, new, expected):
    """19.7."""
    from pcmem_tui.diff import text_diff

    assert text_diff(old, new).plain == expected


def test_diff_folds_long_unchanged_stretches_around_changes():
    from pcmem_tui.diff import CONTEXT, text_diff

    middle = " ".join(f"word{i}" for i in range(80))
    shown = text_diff(f"Start {middle} end one.", f"Begin {middle} end two.").plain
    assert shown.startswith("[-Start-]{+Begin+} word0") and shown.endswith("end [-one-]{+two+}.")
    assert "…" in shown and len(shown) < 2 * CONTEXT + 60


class FallbackReranker(ScriptedReranker):
    """A decision-style rerank whose model said no to everything: the built-in fallback keeps coarse 1..k."""

    policy_id = "test.decision-fallback.v1"

    def rerank(self, query, candidates, limit, progress=None):  # noqa: ANN001, ANN201
        decisions = tuple(pcmem.CandidateDecision(rank=rank, outcome="no", yes_probability=0.04 + rank / 100)
                          for rank in range(1, len(candidates) + 1))
        return MemoryRerankDecision(selected_ranks=tuple(range(1, limit + 1)), used_fallback=True,
                                    usage=Usage(requests=len(candidates)), decision_calls=len(candidates),
                                    decisions=decisions)


async def test_a_decision_rerank_with_fallback_says_so_in_rows_summary_and_search_status(store_path):
    """19.9: no "✓ kept" on rows the model rejected; the per-candidate verdicts with p(yes) are shown."""
    with open_store(store_path, reranker=FallbackReranker()) as runtime:
        app = make_app(runtime)
        async with app.run_test(size=SIZE) as pilot:
            await open_scope(pilot)
            await pilot.press("S")
            await search(pilot, "Marco Priya", limit="2")
            assert "fell back to coarse order: the model kept nothing" in status(app)
            await pilot.press("t")
            table = app.screen.query_one(ListTable)
            shown = rows(table)
            assert [row[2] for row in shown[:2]] == ["↩ fallback", "↩ fallback"]
            assert "✓ kept" not in [row[2] for row in shown]
            assert [row[3] for row in shown[:2]] == ["no p(yes)=0.05", "no p(yes)=0.06"]  # 0.05 is p(yes) (#45.7)
            assert "fallback: the model kept nothing" in text_of(app, "#trace-summary")


def test_the_decision_reranker_records_each_verdict_and_the_probability_of_yes():
    from pcmem.rerank.decision import DecisionReranker
    from pcmem.types.decision import DecisionOutcome, DecisionResult

    class Model:
        policy_id = "test.model"

        def __init__(self) -> None:
            self.outcomes = iter([DecisionOutcome.NO, DecisionOutcome.YES, DecisionOutcome.ABSTAIN])

        def evaluate(self, request):  # noqa: ANN001, ANN201
            outcome = next(self.outcomes)
            return DecisionResult(outcome=outcome, policy_id=self.policy_id,
                                  yes_probability=0.9 if outcome == DecisionOutcome.YES else 0.1)

    hits = [pcmem.MemoryHit(citation=pcmem.Citation(artifact_id="a", revision=1, entry_id=f"e{i}",
                                                    entry_version_id=f"v{i}"), text=f"t{i}", kind="fact", score=0.1,
                            matched_by=("fts",)) for i in range(3)]
    decision = DecisionReranker(Model()).rerank("q", hits, 3)
    assert decision.selected_ranks == (2, 3)
    assert [(d.rank, d.outcome, d.yes_probability) for d in decision.decisions] == [
        (1, "no", 0.1), (2, "yes", 0.9), (3, "abstain", 0.1)]


async def test_a_store_call_longer_than_300_ms_shows_progress(app, monkeypatch):
    """The timing target: past 300 ms the screen shows that it is reading the store, and hides it when done."""
    import time

    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        manifest = app.session.manifest
        monkeypatch.setattr(app.session, "manifest", lambda *args: (time.sleep(2.0), manifest(*args))[1])
        await pilot.press("enter")
        started = time.monotonic()
        while not app.screen.query("WorkProgress") or not app.screen.query_one("WorkProgress").display:
            assert time.monotonic() - started < 1.5, "no progress shown while the store call runs"
            await pilot.pause(0.05)
        strip = app.screen.query_one("WorkProgress")
        assert str(app.screen.query_one("#progress-stage").render()) == "reading the store…"
        await settle(pilot)
        assert not strip.display and app.screen.query_one(ListTable).row_count == 2


async def test_the_entry_text_scrolls(runtime):
    runtime.memory.for_scope("notes").remember(NewEntry(entry_id="long", text="\n".join(f"line {i}" for i in range(40))))
    app = make_app(runtime)
    async with app.run_test(size=SNAPSHOT_SIZE) as pilot:
        await open_scope(pilot, "notes")
        screen = await open_entry(pilot, "long")
        await pilot.press("t")
        box = screen.query_one("#entry-text-box")
        assert box.has_focus and box.max_scroll_y > 0
        await pilot.press("end")
        assert box.scroll_y == box.max_scroll_y


async def test_retiring_an_entry_somebody_else_just_retired_says_so(app, runtime):
    async with app.run_test(size=SIZE) as pilot:
        await open_scope(pilot, "notes")
        await pilot.press("d")
        runtime.memory.for_scope("notes").retire(pcmem.RetireRequest(entry_id="n1", expected_version=1))
        await pilot.press("y")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        assert "Somebody else already did it: it is retired" in text_of(app, "#dialog-error")
        await pilot.press("n")
        await settle(pilot)
        assert isinstance(app.screen, EntriesScreen) and rows(app.screen.query_one(ListTable))[0][3] == "retired"


def test_cli_list_reads_in_creation_order_even_inside_one_batch(tmp_path):
    """19.5 for the CLI: generated ids are monotonic within a process, so one batch lists in the order written."""
    texts = [f"Batch entry {letter}." for letter in "QWERTYUIOPASDFGH"]
    jsonl = tmp_path / "batch.jsonl"
    jsonl.write_text("".join(json.dumps({"text": text}) + "\n" for text in texts))
    db = ["--db", str(tmp_path / "m.duckdb")]
    assert CliRunner().invoke(main, [*db, "import", "--scope", "s", str(jsonl)]).exit_code == 0
    assert CliRunner().invoke(main, [*db, "remember", "--scope", "s", "--id", "aaa-first-by-id", "Later."]).exit_code == 0
    listed = CliRunner().invoke(main, [*db, "list", "--scope", "s"], terminal_width=200).output
    order = [line for line in listed.splitlines() if "Batch entry" in line or "Later." in line]
    assert [next(t for t in [*texts, "Later."] if t in line) for line in order] == [*texts, "Later."]
