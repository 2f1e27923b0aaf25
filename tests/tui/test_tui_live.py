"""The TUI kept open all day beside agents (issue #32): what it shows while the store waits or fails, cancelling
work, drafts, a mistyped path, big scopes and the keys every screen shares.

Real stores (the seeded template of tests/tui/conftest.py), real subprocesses holding the file, Textual's pilot; no timings.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest
from textual.widgets import Input, ProgressBar, Select, TextArea
from tui_pilot import (
    SIZE,
    ScriptedReranker,
    open_entry,
    open_scope,
    open_store,
    row_keys,
    rows,
    search,
    settle,
    status,
    text_of,
)

import pcmem
from pcmem.errors import RerankError
from pcmem.memory.scoped import SyncScopedMemory
from pcmem.rerank.decision import DecisionReranker
from pcmem.types.decision import DecisionOutcome, DecisionResult
from pcmem_tui.app import make_app
from pcmem_tui.screens.base import StoreScreen
from pcmem_tui.screens.dialogs import ConfirmScreen, KeepDraftScreen, RememberScreen, ReviseScreen
from pcmem_tui.screens.entries import EntriesScreen
from pcmem_tui.screens.trace import summary
from pcmem_tui.table import ListTable
from pcmem_tui.widgets import StoreBar, WorkProgress

HOLD = """
import sys, duckdb
held = duckdb.connect(sys.argv[1])  # not a pcmem owner: it holds the file and serves nobody until told to stop
print("held", flush=True)
sys.stdin.readline()
held.close()
print("released", flush=True)
"""


class Holder:
    """Another program that holds the store file without serving it (an older pcmem, a DuckDB shell) until released:
    a pcmem process would serve the TUI instead (see tests/owner/test_owner.py)."""

    def __init__(self, path: Path) -> None:
        self.process = subprocess.Popen([sys.executable, "-c", HOLD, str(path)], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None and self.process.stdout.readline().strip() == "held"

    def release(self) -> None:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write("\n")
        self.process.stdin.flush()
        assert self.process.stdout.readline().strip() == "released"
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)


@pytest.fixture
def holder_for():
    holders: list[Holder] = []

    def start(path: Path) -> Holder:
        holders.append(Holder(path))
        return holders[-1]

    yield start
    for holder in holders:
        holder.stop()


def store_bar(app) -> str:
    return str(app.screen.query_one(StoreBar).render())


# --- item 5: the busy strip ------------------------------------------------------------------------------------------


async def test_the_busy_strip_goes_away_after_picking_a_revision_stepping_and_filtering(app, monkeypatch):
    """#32.5: a load replaced at once by another (picking a revision reloads, and so does the screen's resume)
    never sent Textual's "cancelled" message, so the strip stayed up with an animated bar for the whole session."""
    monkeypatch.setattr(StoreScreen, "BUSY_AFTER", 0.001)  # every store call shows the strip while it runs
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_scope(pilot)
        await pilot.press("v")
        await settle(pilot)
        await pilot.press("down", "enter")
        await settle(pilot)
        assert screen.manifest.revision == 2
        for keys in (("h",), ("left_square_bracket",), ("right_square_bracket",), ("a",), ("f", "t", "escape")):
            await pilot.press(*keys)
            await settle(pilot)
            strip = screen.query_one(WorkProgress)
            assert not strip.display, f"the strip still shows {strip.stage!r} after {keys}"
        # nothing animates while idle: Textual's indeterminate bar redraws 15 times a second even when hidden
        assert all(bar.total is not None for bar in app.screen.query(ProgressBar))


# --- item 2: stale data and recovery ---------------------------------------------------------------------------------


OWNER = """
import sys, pcmem
runtime = pcmem.open(sys.argv[1], embedder=None)  # the owner: it serves every other pcmem process
print("owner", flush=True)
sys.stdin.readline()
"""


async def test_beside_an_owner_the_tui_is_its_client_and_takes_the_store_over_when_it_is_killed(store_path):
    """#32.1 with #28: beside ``pcmem mcp`` (any pcmem owner) the TUI is a client, says so, and sees the store live;
    when the owner dies (SIGKILL) the TUI's next call takes the file over and the screen carries on."""
    owner = subprocess.Popen([sys.executable, "-c", OWNER, str(store_path)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        assert owner.stdout is not None and owner.stdout.readline().strip() == "owner"
        app = make_app(store_path, embedder=None, lock_timeout=5)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            assert store_bar(app).startswith(f"{store_path} · client of process {owner.pid}")
            assert "live · read " in store_bar(app)
            owner.kill()
            owner.wait(timeout=30)
            await pilot.press("enter")  # open notes (the first scope): the owner is gone
            await settle(pilot)
            assert row_keys(app.screen.query_one(ListTable)) == ["n1", "n2"]
            assert store_bar(app).startswith(f"{store_path} · owner") and "stale" not in store_bar(app)
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait(timeout=30)


async def test_opening_a_held_store_waits_for_it_and_opens_when_released(store_path, holder_for, monkeypatch):
    holder = holder_for(store_path)
    app = make_app(store_path, embedder=None, lock_timeout=0.2)
    monkeypatch.setattr(app, "OPEN_RETRY", 3600.0)  # the test retries by hand
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.session is None and f"held by process {holder.process.pid}" not in text_of(app, "#opening")
        assert "waiting for the store" in text_of(app, "#opening") and str(holder.process.pid) in text_of(app, "#opening")
        holder.release()
        app.open_store(store_path)
        await settle(pilot)
        assert app.session is not None and row_keys(app.screen.query_one(ListTable)) == ["notes", "pcmem-demo"]


# --- items 3 and 4: a failed search, cancelling a rerank -------------------------------------------------------------


class FlakyReranker(ScriptedReranker):
    """Reranks until told to fail (a model that timed out, a degraded backend)."""

    def __init__(self) -> None:
        super().__init__(ranks=(3, 1))
        self.fail = False

    def rerank(self, query, candidates, limit, progress=None):  # noqa: ANN001, ANN201
        if self.fail:
            raise RerankError("the model timed out on candidate 2")
        return super().rerank(query, candidates, limit, progress)


async def test_a_failed_search_leaves_no_earlier_hits_and_no_trace_to_open(store_path):
    """#32.3: the second search failed, yet the first one's hits stayed on screen and ``t`` opened their trace."""
    reranker = FlakyReranker()
    with open_store(store_path, reranker=reranker) as runtime:
        app = make_app(runtime)
        async with app.run_test(size=SIZE) as pilot:
            await open_scope(pilot)
            await pilot.press("S")
            screen = app.screen
            await search(pilot, "Marco Priya", limit="3")
            assert screen.page is not None and screen.page.rerank is not None
            reranker.fail = True
            await search(pilot, "release day", limit="3")
            assert status(app) == "✗ the model timed out on candidate 2"
            assert screen.page is None and screen.query_one("#hits", ListTable).row_count == 0
            assert not screen.query_one("#hit-detail").display
            await pilot.press("t")
            assert app.screen is screen


class GatedModel:
    """A decision model whose first answer waits until the test lets it go; counts every candidate it judges."""

    policy_id = "test.gated"

    def __init__(self) -> None:
        self.calls = 0
        self.judging = threading.Event()
        self.go = threading.Event()

    def evaluate(self, request):  # noqa: ANN001, ANN201
        self.calls += 1
        self.judging.set()
        self.go.wait(timeout=60)
        return DecisionResult(outcome=DecisionOutcome.NO, policy_id=self.policy_id, yes_probability=0.1)


class Finishing:
    """The decision reranker, noting when its rerank call has returned (or raised) in the worker thread."""

    def __init__(self, inner: DecisionReranker) -> None:
        self.inner, self.policy_id, self.finished = inner, inner.policy_id, threading.Event()

    def rerank(self, query, candidates, limit, progress=None):  # noqa: ANN001, ANN201
        try:
            return self.inner.rerank(query, candidates, limit, progress)
        finally:
            self.finished.set()


@pytest.mark.parametrize("key", ["escape", "ctrl+c"])
async def test_cancel_stops_a_running_rerank_and_the_model_stops_judging(store_path, key):
    """#32.4: esc left the screen while the model judged the whole pool (40% CPU for minutes). Now esc or ctrl+c
    cancels, the reranker stops at the next candidate, the screen stays; esc again goes back."""
    model = GatedModel()
    reranker = Finishing(DecisionReranker(model))
    with open_store(store_path, reranker=reranker) as runtime:
        app = make_app(runtime)
        async with app.run_test(size=SIZE) as pilot:
            await open_scope(pilot)
            await pilot.press("S")
            screen = app.screen
            screen.query_one("#query", Input).value = "Marco Priya"
            screen.query_one("#query", Input).focus()
            await pilot.press("enter")
            while not model.judging.is_set():  # the model is judging candidate 1
                await pilot.pause(0.01)
            await pilot.press(key)
            model.go.set()
            assert reranker.finished.wait(timeout=30)
            await settle(pilot)
            assert model.calls == 1, f"the model went on judging {model.calls} candidates after the cancel"
            assert app.screen is screen and screen.page is None
            assert status(app) == "cancelled: searching" and not screen.query_one(WorkProgress).display
            await pilot.press("escape")
            assert isinstance(app.screen, EntriesScreen)


def test_the_trace_names_the_embedder_reads_long_latencies_and_counts_no_tokens_it_did_not_use():
    """#32.4, #32.11: ``latency 246469 ms`` and ``0 requests · 0 in + 0 out tokens`` for the embedding policy."""
    hit = pcmem.MemoryHit(citation=pcmem.Citation(artifact_id="mem_a", revision=1, entry_id="e1", entry_version_id="v1"),
                          text="t", kind="fact", score=0.5, matched_by=("fts",))
    trace = pcmem.RerankTrace(policy_id="powercontext.memory.rerank.embedding.v1", candidates=(hit,),
                              selected_ranks=(1,), discarded_rank_count=0, used_fallback=False, latency_ms=246469,
                              usage=pcmem.Usage(), embedder="minilm-l6 (384 dims)")
    page = pcmem.SearchPage(memory=None, mode="fts", hits=(hit,), rerank=trace)
    shown = summary(page).plain
    assert "latency 4 min 06 s" in shown and "embedder minilm-l6 (384 dims)" in shown
    assert "requests" not in shown and "tokens" not in shown


# --- item 6: drafts --------------------------------------------------------------------------------------------------


async def test_esc_in_remember_asks_then_keeps_the_draft_and_the_dialog_reopens_with_it(app, runtime):
    """#32.6: esc discarded the typed text without asking, and ``n`` started empty again."""
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_scope(pilot, "notes")
        await pilot.press("n")
        app.screen.query_one("#kind", Input).value = "todo"
        app.screen.query_one(TextArea).text = "Half of a thought"
        await pilot.press("escape")
        assert isinstance(app.screen, KeepDraftScreen)
        await pilot.press("k")
        assert app.screen is screen
        await pilot.press("n")
        dialog = app.screen
        assert isinstance(dialog, RememberScreen)
        assert dialog.query_one(TextArea).text == "Half of a thought" and dialog.query_one("#kind", Input).value == "todo"
        await pilot.press(*" finished.")  # the cursor is at the end of the draft
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert app.screen is screen
        assert "Half of a thought finished." in [e.entry.text for e in runtime.memory.for_scope("notes").list().entries]
        await pilot.press("n")  # saved: the draft is gone
        assert app.screen.query_one(TextArea).text == ""
        app.screen.query_one(TextArea).text = "Not wanted"
        await pilot.press("escape", "d")
        assert app.screen is screen
        await pilot.press("n")
        assert app.screen.query_one(TextArea).text == ""
        await pilot.press("escape")  # nothing typed: closes without asking
        assert app.screen is screen


async def test_revise_puts_the_cursor_at_the_end_keeps_a_draft_and_shows_the_new_version_after_a_conflict(app, runtime):
    """#32.6 and #32.11: typing landed before the existing text; the title kept the old version after a conflict."""
    notes = runtime.memory.for_scope("notes")
    async with app.run_test(size=SIZE) as pilot:
        await open_scope(pilot, "notes")
        entry_screen = await open_entry(pilot, "n2")
        await pilot.press("e")
        await pilot.press(*" Soon")
        assert app.screen.query_one(TextArea).text == "Book the Porto venue. Soon"
        await pilot.press("escape", "k")
        assert app.screen is entry_screen
        await pilot.press("e")
        dialog = app.screen
        assert isinstance(dialog, ReviseScreen) and dialog.query_one(TextArea).text == "Book the Porto venue. Soon"
        assert "(v1)" in str(dialog.query_one("#revise-title").render())
        notes.revise(pcmem.ReviseRequest(entry_id="n2", text="Book the Lisbon venue.", expected_version=1))
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert app.screen is dialog and "(v2)" in str(dialog.query_one("#revise-title").render())


async def test_the_retire_question_shows_the_entry_text(app):
    """#32.11: the prompt showed only an id."""
    async with app.run_test(size=SIZE) as pilot:
        await open_scope(pilot, "notes")
        await pilot.press("d")
        assert isinstance(app.screen, ConfirmScreen)
        assert "“Buy oolong tea for Marco.”" in str(app.screen.query_one(".dialog-question").render())


# --- item 7: a mistyped path -----------------------------------------------------------------------------------------


async def test_a_mistyped_path_creates_nothing_until_the_first_write_and_the_bar_says_so(tmp_path):
    """#32.7: the TUI created a 2 MB store and its folders for a typo in --db before anything was written."""
    path = tmp_path / "typo" / "memroy.duckdb"
    app = make_app(path, embedder=None)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.watch_store()
        await settle(pilot)
        assert not path.parent.exists()
        assert text_of(app, "#title") == f"No store at {path} yet: press n to remember something, which creates it. " \
                                         f"Its folder {path.parent} does not exist either: is the path right?"
        assert store_bar(app).startswith(f"{path} · not created yet")
        await pilot.press("n")
        app.screen.query_one("#scope", Input).value = "first"
        app.screen.query_one(TextArea).text = "Now it exists."
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert path.exists() and row_keys(app.screen.query_one(ListTable)) == ["first"]
        assert store_bar(app).startswith(f"{path} · owner")


# --- item 8: big scopes while an agent writes ------------------------------------------------------------------------


async def test_an_outside_write_rereads_only_the_entries_it_changed(app, runtime, monkeypatch):
    """#32.8: every outside write read the whole manifest again (10,000 entry objects: 0.5 s on a quiet machine,
    seconds under load, while ``j`` waited for the GIL), and so did a return from an entry and toggling ``a``.
    Now the manifest read once is brought forward by the changes since: one read per changed entry."""
    listed = []
    whole = SyncScopedMemory.list
    monkeypatch.setattr(SyncScopedMemory, "list", lambda self, *args, **kw: (listed.append(self.scope),
                                                                              whole(self, *args, **kw))[1])
    demo = runtime.memory.for_scope("pcmem-demo")
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_scope(pilot)
        table = screen.query_one(ListTable)
        app.watch_store()
        await settle(pilot)
        assert listed == ["pcmem-demo"]
        current = demo.get_entry("release-day")
        demo.revise(pcmem.ReviseRequest(entry_id="release-day", text="Releases moved to Wednesdays.",
                                        expected_version=current.entry.version))
        demo.retire(pcmem.RetireRequest(entry_id="release-owner", expected_version=1))
        demo.remember("An agent remembered this meanwhile.")
        app.watch_store()
        await settle(pilot)
        await pilot.press("a", "a")  # hide the retired entries and show them again
        await open_entry(pilot, "release-day")
        await pilot.press("escape")
        await settle(pilot)
        assert listed == ["pcmem-demo"], "the whole manifest was read again"
        assert screen.manifest.revision == 6 and table.row_count == 19
        shown = dict(zip(row_keys(table), rows(table), strict=True))
        # (rows another process changed are marked ✱ for a moment: #45.9)
        assert shown["release-day"][0] == "✱ Releases moved to Wednesdays." and shown["release-day"][2] == "v3"
        assert shown["release-owner"][3] == "retired"
        assert rows(table)[-1][0] == "✱ An agent remembered this meanwhile."  # appended in creation order
        await pilot.press("left_square_bracket", "left_square_bracket", "left_square_bracket")
        await settle(pilot)  # back at revision 3, as a whole read shows it
        assert screen.manifest.revision == 3 and listed == ["pcmem-demo"]
        assert rows(table) == [[cell for cell in row] for row in _whole_rows(runtime, 3)]


async def test_a_forget_at_the_head_erases_the_entry_from_the_past_revision_on_screen(app, runtime):
    """A forget rewrites every revision: the past revision on screen, brought forward from the one read before,
    must not keep showing the erased text."""
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_scope(pilot)
        await pilot.press("left_square_bracket")
        await settle(pilot)
        assert screen.manifest.revision == 2 and "marco-tea" in row_keys(screen.query_one(ListTable))
        app.watch_store()
        await settle(pilot)
        runtime.memory.for_scope("pcmem-demo").forget("marco-tea")
        app.watch_store()
        await settle(pilot)
        assert screen.manifest.revision == 2
        assert "marco-tea" not in row_keys(screen.query_one(ListTable))
        assert all("oolong" not in entry.entry.text for entry in screen.manifest.entries)


async def test_an_outside_write_at_the_head_does_not_rebuild_the_key_footer(app, runtime, monkeypatch):
    """Each manifest load called ``refresh_bindings``, and Textual's footer then removes and mounts all its key
    widgets (a layout of the screen): once per outside write, while the user pressed ``j``. Now only when a key
    became enabled or disabled (stepping to a past revision enables ``h``)."""
    from textual.widgets import Footer

    rebuilt = []
    recompose = Footer.recompose
    monkeypatch.setattr(Footer, "recompose", lambda self: (rebuilt.append(1), recompose(self))[1])
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_scope(pilot)
        app.watch_store()
        await settle(pilot)
        rebuilt.clear()
        runtime.memory.for_scope("pcmem-demo").remember("An agent's note.")
        app.watch_store()
        await settle(pilot)
        assert screen.manifest.revision == 4 and rebuilt == []
        await pilot.press("left_square_bracket")
        await settle(pilot)
        assert screen.manifest.revision == 3 and rebuilt


async def test_an_outside_write_that_adds_a_row_lays_nothing_out_again(app, runtime, monkeypatch):
    """Every outside write laid the whole screen out again (and so repainted all of it): the list's row count, the
    header's revision, the title and the store bar's read time each asked for a layout, while the user pressed
    ``j``. A new row now repaints the list and the lines that changed."""
    from textual.widget import Widget

    laid_out = []
    refresh = Widget.refresh
    monkeypatch.setattr(Widget, "refresh", lambda self, *regions, **options: (
        options.get("layout") and laid_out.append(type(self).__name__), refresh(self, *regions, **options))[1])
    monkeypatch.setattr(StoreScreen, "BUSY_AFTER", 3600.0)  # a slow read under load shows the busy strip: not this
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_scope(pilot)
        app.watch_store()
        await settle(pilot)
        laid_out.clear()
        runtime.memory.for_scope("pcmem-demo").remember("An agent's note.")
        app.watch_store()
        await settle(pilot)
        assert screen.manifest.revision == 4 and screen.query_one(ListTable).row_count == 19
        assert laid_out == []


def test_a_step_over_a_big_batch_in_a_small_scope_reads_it_whole_not_entry_by_entry(tmp_path, monkeypatch):
    """Reading 25 changed entries one by one cost more than reading a 125-entry manifest whole (the bench's step to
    a past revision got slower); how many are read one by one now follows the scope's size."""
    from pcmem_tui.manifests import Manifests

    reads = []
    for name in ("list", "get_entry"):
        original = getattr(SyncScopedMemory, name)
        monkeypatch.setattr(SyncScopedMemory, name, lambda self, *args, _name=name, _original=original, **kw: (
            reads.append(_name), _original(self, *args, **kw))[1])
    with open_store(tmp_path / "m.duckdb") as runtime:
        memory = runtime.memory.for_scope("s")
        for batch, size in (("first", 100), ("second", 25)):
            memory.remember(pcmem.RememberRequest(entries=tuple(pcmem.NewEntry(text=f"{batch} {i}") for i in range(size))))
        manifests = Manifests()
        manifests.read(memory, None)
        reads.clear()
        assert len(manifests.read(memory, 1).entries) == 100 and reads == ["list"]
        manifests.read(memory, None)  # back to the head: the batch again, read whole
        memory.remember("An agent's note.")
        reads.clear()
        assert len(manifests.read(memory, None).entries) == 126 and reads == ["get_entry"]


def _whole_rows(runtime, revision: int) -> list[list[str]]:
    """The entries screen's rows for ``revision`` read whole, in creation order."""
    from pcmem_tui.screens.entries import _row

    page = runtime.memory.for_scope("pcmem-demo").list(pcmem.ListRequest(revision=revision, state="all"))
    created = {change.entry_id: change.revision for change in
               reversed(runtime.memory.for_scope("pcmem-demo").changes(0).changes) if change.operation == "remember"}
    ordered = sorted(page.entries, key=lambda e: (created[e.entry.entry_id], e.entry.entry_id))
    return [[str(cell) for cell in _row(entry)] for entry in ordered]


async def test_a_big_scope_makes_cells_only_for_the_rows_on_screen(runtime, monkeypatch):
    """#32.8: the list built (and DataTable measured) every cell of every row on each load, sort and filter
    keystroke: 10,000 entries took 18 s to open. Cells are now made for the rows drawn."""
    import pcmem_tui.screens.entries as entries_module

    texts = [f"Bulk note {i} about the staging cluster." for i in range(400)]
    runtime.memory.for_scope("bulk").remember(pcmem.RememberRequest(entries=tuple(pcmem.NewEntry(text=t) for t in texts)))
    made = []
    row = entries_module._row
    monkeypatch.setattr(entries_module, "_row", lambda *args: (made.append(1), row(*args))[1])
    app = make_app(runtime)
    screen_lines = SIZE[1]
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_scope(pilot, "bulk")
        table = screen.query_one(ListTable)
        assert len(made) <= 2 * screen_lines, f"open: {len(made)} rows' cells made for {screen_lines} lines"
        for keys in (("s",), ("slash", "n"), ("escape", "G")):  # a sort, a filter keystroke, the last row
            made.clear()
            await pilot.press(*keys)
            await pilot.pause()
            assert len(made) <= 3 * screen_lines, f"{keys}: {len(made)} rows' cells made for {screen_lines} lines"
        assert table.row_count == 400 and table.cursor_row == 399


# --- items 9 and 10: the same keys everywhere, reflow, the citation at 80 columns ----------------------------------


async def test_search_and_trace_take_the_table_keys_keep_the_form_and_show_the_citation_first(store_path):
    """#32.9, #32.10: j/k/g/G did nothing in the hits and the trace; the form reset on each visit; the hit box cut
    the citation's ``ver_…`` part under a long text at 80×24; no ``y`` outside the entry screen."""
    with open_store(store_path, reranker=ScriptedReranker(ranks=(3, 1))) as runtime:
        app = make_app(runtime)
        async with app.run_test(size=(80, 24)) as pilot:
            await open_scope(pilot)
            await pilot.press("S")
            screen = app.screen
            await search(pilot, "Marco Priya", limit="3")
            hits = screen.query_one("#hits", ListTable)
            await pilot.press("j")
            assert hits.cursor_row == 1
            detail = text_of(app, "#hit-detail")
            hit = screen.page.hits[1]
            assert detail.index(hit.citation.entry_version_id) < detail.index(hit.text[:20])
            await pilot.press("y")
            assert status(app).startswith(f"sent {hit.citation} to the terminal")
            await pilot.press("t")
            trace = app.screen.query_one(ListTable)
            await pilot.press("G")
            assert trace.cursor_row == trace.row_count - 1
            await pilot.press("escape", "escape")
            assert isinstance(app.screen, EntriesScreen)
            await pilot.press("S")
            assert app.screen.query_one("#mode", Select).value == "fts"
            assert app.screen.query_one("#limit", Input).value == "3"


async def test_after_copying_a_citation_the_keys_still_work_and_the_field_keeps_the_citation(app):
    """#32.9: after ``c`` the citation field took every key; ``e`` replaced the citation."""
    async with app.run_test(size=SIZE) as pilot:
        await open_scope(pilot, "notes")
        screen = await open_entry(pilot, "n2")
        await pilot.press("c")
        field = screen.query_one("#citation-field", Input)
        citation = str(screen.detail.entry.citation)
        field.value = "e"  # what a key landing in the field did
        await pilot.pause()
        assert field.value == citation
        await pilot.press("e")
        assert isinstance(app.screen, ReviseScreen)
