"""The TUI's screenshots for the documentation, made by the TUI itself: ``python -m docsgen.screenshots [FOLDER]``.

The real app (``pcmem_tui``) runs headless under Textual's pilot on a demo store and saves each screen as SVG
(``App.export_screenshot``). The same bytes come out on every run: the store is seeded with a frozen clock and ids
made from it (:func:`_repeatable_ids`), the status bar's clock is fixed, the embedder is off (full-text search), and
the SVG's font falls back to a local monospace font instead of naming a web font to download. Written to
``docs/assets/`` by default; tests/docs/test_docs_screenshots.py makes them again and compares.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import random
import re
import sys
import tempfile
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, datetime, timedelta, tzinfo
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ASSETS = Path(__file__).resolve().parent.parent / "docs" / "assets"
SIZE = (110, 30)
#: Textual's SVG names Fira Code by URL (a CDN) after the local font: the docs name no URL, so nothing downloads.
_WEB_FONT = re.compile(r",\s*url\(\"https?://[^\"]+\"\) format\(\"[^\"]+\"\)")
#: Rich names the SVG's classes after a hash of its text, salted per process (PYTHONHASHSEED): one fixed name instead.
_CLASS_PREFIX = re.compile(r"terminal-\d+")


class _FrozenClock:
    """Each call is one second after the previous one, from 2026-01-01 UTC (what the TUI's tests use)."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


@contextlib.contextmanager
def _repeatable_ids() -> Iterator[None]:
    """pcmem's ids are a millisecond clock and random bits: here a clock that ticks a millisecond per id and bits from
    a seeded generator, so the same ids come out on every run."""
    import pcmem.ids as ids

    bits, ticks = random.Random(2026), itertools.count(1_767_225_600_000)
    saved = ids.os, ids.time, ids._last_value
    ids.os = SimpleNamespace(urandom=bits.randbytes)  # type: ignore[assignment]
    ids.time = SimpleNamespace(time_ns=lambda: next(ticks) * 1_000_000)  # type: ignore[assignment]
    ids._last_value = 0
    try:
        yield
    finally:
        ids.os, ids.time, ids._last_value = saved


def _seed(path: Path) -> None:
    import pcmem
    from pcmem import NewEntry, RememberRequest
    from pcmem.cli.demo_command import seed_demo

    with _repeatable_ids(), pcmem.open(path, embedder=None, clock=_FrozenClock()) as runtime:
        seed_demo(runtime.memory.for_scope("pcmem-demo"))
        runtime.memory.for_scope("notes").remember(RememberRequest(entries=(
            NewEntry(entry_id="n1", text="Buy oolong tea for Marco."),
            NewEntry(entry_id="n2", text="Book the Porto venue.", kind="todo"),
        )))


async def _settle(pilot: Any) -> None:
    await pilot.pause()
    while not pilot.app.screen.is_mounted or any(worker.is_running for worker in pilot.app.workers):
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()


async def _open_scope(pilot: Any, scope: str) -> None:
    from pcmem_tui.table import ListTable

    for _ in range(600):
        await _settle(pilot)
        tables = pilot.app.screen.query(ListTable)
        if tables and scope in tables.first().row_keys:
            break
        await pilot.pause(0.05)
    table = pilot.app.screen.query_one(ListTable)
    table.move_cursor(row=table.row_keys.index(scope))
    await pilot.press("enter")
    await _settle(pilot)


async def _scopes(pilot: Any) -> None:
    await _open_scope(pilot, "notes")  # loaded; then back, so the list shows both scopes with the cursor at the top
    await pilot.press("q")
    await _settle(pilot)


async def _entries(pilot: Any) -> None:
    await _open_scope(pilot, "pcmem-demo")


async def _entry(pilot: Any) -> None:
    from pcmem_tui.table import ListTable

    await _open_scope(pilot, "pcmem-demo")
    table = pilot.app.screen.query_one(ListTable)
    table.move_cursor(row=table.row_keys.index("release-day"))
    await pilot.press("enter")
    await _settle(pilot)


async def _search(pilot: Any) -> None:
    from textual.widgets import Input, Select

    await _open_scope(pilot, "pcmem-demo")
    await pilot.press("S")
    await _settle(pilot)
    screen = pilot.app.screen
    screen.query_one("#mode", Select).value = "fts"
    screen.query_one("#query", Input).value = "when do releases go out?"
    screen.query_one("#query", Input).focus()
    await pilot.press("enter")
    await _settle(pilot)


#: Each screenshot's file name and how the pilot gets there from the start.
SCREENS: dict[str, Callable[[Any], Awaitable[None]]] = {
    "tui-scopes.svg": _scopes, "tui-entries.svg": _entries, "tui-entry.svg": _entry, "tui-search.svg": _search,
}


async def _shoot(store: Path, steps: Callable[[Any], Awaitable[None]], name: str) -> str:
    import pcmem_tui.freshness
    from pcmem_tui.app import make_app

    def noon(tz: tzinfo | None = None) -> datetime:  # the status bar's "read 12:00:00"
        return datetime(2026, 1, 1, 12, 0, 0, tzinfo=tz)

    pcmem_tui.freshness.clock = noon
    app = make_app(store, embedder=None)
    async with app.run_test(size=SIZE) as pilot:
        await steps(pilot)
        await _settle(pilot)
        svg = app.export_screenshot(title="pcmem")
    return _CLASS_PREFIX.sub(f"terminal-{name.removesuffix('.svg')}", _WEB_FONT.sub("", svg))


def make(folder: Path = ASSETS) -> list[Path]:
    """Make every screenshot into ``folder``; returns the files written."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    with tempfile.TemporaryDirectory(prefix="pcmem-screenshots-") as scratch:
        for name in ("XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME"):
            os.environ[name] = str(Path(scratch) / name.lower())  # no drafts or search history of the user's
        for name in ("POWERCONTEXT_SERVER_INFERENCE_GENERATION_MODEL", "POWERCONTEXT_SERVER_RUNTIME_MEMORY_RERANK_ENABLED",
                     "PCMEM_DB", "PCMEM_EMBEDDER"):
            os.environ.pop(name, None)
        template = Path(scratch) / "template.duckdb"
        _seed(template)
        for number, (name, steps) in enumerate(SCREENS.items()):
            shot = Path(scratch) / f"shot{number}"
            shot.mkdir()
            (shot / "memory.duckdb").write_bytes(template.read_bytes())
            here = Path.cwd()
            os.chdir(shot)  # the status bar names the store as given: a relative name reads the same on every run
            try:
                svg = asyncio.run(_shoot(Path("memory.duckdb"), steps, name))
            finally:
                os.chdir(here)
            (folder / name).write_text(svg, encoding="utf-8")
            written.append(folder / name)
    return written


if __name__ == "__main__":
    for path in make(Path(sys.argv[1]) if len(sys.argv) > 1 else ASSETS):
        print(path)
