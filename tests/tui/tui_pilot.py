"""Driving the terminal UI in tests: the screen sizes, a frozen clock, a scripted reranker, and the steps a user
takes through Textual's Pilot (open a scope, an entry, search), with what a test reads off the screen."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

from rich.text import Text
from syrupy.extensions.image import SVGImageSnapshotExtension
from textual.pilot import Pilot
from textual.widgets import DataTable, Input, Select, Static

import pcmem
from pcmem.types.rerank import MemoryRerankDecision
from pcmem.types.usage import Usage
from pcmem_tui.app import PcmemApp
from pcmem_tui.screens.entries import EntriesScreen
from pcmem_tui.screens.entry import EntryScreen
from pcmem_tui.screens.search import SearchScreen
from pcmem_tui.table import ListTable
from pcmem_tui.widgets import StatusLine

ROOT = Path(__file__).resolve().parents[2]


SNAPSHOT_SIZE = (80, 24)


SNAPSHOT_SIZES = [(80, 24), (120, 36)]


SIZE_IDS = ["80x24", "120x36"]


SIZE = (100, 30)


class RootSVGExtension(SVGImageSnapshotExtension):
    """SVG screenshots in the top-level ``snapshots/<test module>/`` folder, like the amber snapshots."""

    @classmethod
    def dirname(cls, *, test_location) -> str:  # type: ignore[override]
        return str(ROOT / "snapshots" / Path(test_location.filepath).stem)


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
        selected = tuple(r for r in self.ranks if r <= len(candidates))[:limit]
        decisions = tuple(pcmem.CandidateDecision(rank=rank, outcome="yes" if rank in selected else "no",
                                                  yes_probability=0.9 if rank in selected else 0.2)
                          for rank in range(1, len(candidates) + 1))
        return MemoryRerankDecision(selected_ranks=selected,
                                    usage=Usage(requests=len(candidates), input_tokens=640, output_tokens=7),
                                    discarded_rank_count=self.discarded, decision_calls=len(candidates),
                                    decisions=decisions)


def open_store(path: Path, **options) -> pcmem.SyncRuntime:
    return pcmem.open(path, embedder=None, clock=FrozenClock(), **options)


async def settle(pilot: Pilot) -> None:
    """Let thread workers finish and the messages they posted be handled (which may start more workers)."""
    await pilot.pause()
    # a screen pushed by a worker (the store opened) composes on a later turn of the loop, then starts its load
    while not pilot.app.screen.is_mounted or any(worker.is_running for worker in pilot.app.workers):
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()


def rows(table: ListTable | DataTable) -> list[list[str]]:
    """Every row's cells as text (a list table's uncut: what it was given, not what fits)."""
    if isinstance(table, ListTable):
        return [table.cells_at(row) for row in range(table.row_count)]
    return [[str(cell) for cell in table.get_row(row.key)] for row in table.ordered_rows]


def row_keys(table: ListTable | DataTable) -> list[str]:
    if isinstance(table, ListTable):
        return table.row_keys
    return [str(row.key.value) for row in table.ordered_rows]


def drawn(table: ListTable, row: int) -> str:
    """The line the table draws for ``row`` (scrolled onto the screen first), as the terminal shows it."""
    table.move_cursor(row=row)
    return table.render_line(row - round(table.scroll_y) + 1).text


def text_of(app: PcmemApp, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).render())


def status(app: PcmemApp) -> str:
    return app.screen.query_one(StatusLine).message


async def open_scope(pilot: Pilot, scope: str = "pcmem-demo") -> EntriesScreen:
    await settle(pilot)
    for _ in range(600):  # on a loaded machine the scopes screen may not have started its load yet
        tables = pilot.app.screen.query(ListTable)
        if tables and scope in row_keys(tables.first()):
            break
        await pilot.pause(0.05)
        await settle(pilot)
    table = pilot.app.screen.query_one(ListTable)
    table.move_cursor(row=row_keys(table).index(scope))
    await pilot.press("enter")
    await settle(pilot)
    assert isinstance(pilot.app.screen, EntriesScreen)
    return pilot.app.screen


async def open_entry(pilot: Pilot, entry_id: str) -> EntryScreen:
    table = pilot.app.screen.query_one(ListTable)
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


LATENCY = re.compile(r"latency [0-9.]+ (?:ms|s|min [0-9]+ s)")


SVG_UNIQUE_ID = re.compile(r"terminal-\d+")


def _masked(text: Text) -> Text:
    masked = text.copy()
    # Same-length masks keep every style span in place (and wrap the text exactly where the real ids wrap).
    masked.plain = LATENCY.sub("latency N ms", IDS.sub(lambda m: f"{m.group(1)}_{'x' * 26}", text.plain))
    return masked


async def screenshot(pilot: Pilot) -> str:
    """The SVG with what differs between runs masked before rendering: random artifact/version ids, latency."""
    for widget in (w for screen in pilot.app.screen_stack for w in screen.query(Static)):
        if isinstance(widget.content, Text) and (IDS.search(widget.content.plain) or "latency" in widget.content.plain):
            widget.update(_masked(widget.content))
    await pilot.pause()
    return SVG_UNIQUE_ID.sub("terminal", pilot.app.export_screenshot(title="pcmem"))  # rich hashes the content
