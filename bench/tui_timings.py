"""Timings a user feels in ``pcmem tui``, measured through Textual's pilot on one seeded store.

One command reproduces them (the store is built once and reused from ``--dir``)::

    python -m pcmem_bench.tui_timings                     # 500 entries in 4 scopes (one of them CJK), real embedder
    python -m pcmem_bench.tui_timings --embedder none     # without vectors (FTS only)

The searches are the app's own, so they keep a search history, as a user's do: one small file for the run's store
path in the user's state folder (see :mod:`pcmem_tui.history`), the same file every run. Each figure is wall time
from the key press (or app start) until the screen shows the result (the worker finished, its message was handled
and the screen repainted): start to first screen, open scope (``ops``, 125 entries), open entry, first and later
search, a write, stepping to a past revision. Every pass runs in a fresh process, so the first search pays what a
user's first search pays (loading the embedder). The app runs headless at 120×36, as in the snapshot tests.

``--big 3000 10000`` adds one scope of each size, each measured in a fresh process of its own: start until the scopes
are listed, the first open (the first rows drawn, then every row loaded), the first search of the scope (hybrid with
an embedder), stepping to a past revision read whole (first rows), sort, one filter
keystroke, ``j`` while another process writes to the scope every 0.75 s (median and worst of 20 presses, from the
first row down: each from the key's arrival until the cursor is on the next row and the screen is painted, and the
longest stall of the event loop meanwhile), stepping to the previous revision and back, and the process's CPU while
the scope sits idle on screen (5 s). "First rows" are timed from a key sent as a terminal sends it, not through
``pilot.press``, which waits for the process to go idle and so would count the rest of the scope being read in the
background::

    python -m pcmem_bench.tui_timings --embedder none --big 3000 10000

By default the TUI opens the store first and owns it: the writer is its client, so the TUI's process runs the
writer's writes too. ``--owner mcp`` starts a real ``pcmem mcp`` on the store first (an agent started before the
TUI), so the TUI is a client for every interaction and the writer's writes run in the MCP server's process::

    python -m pcmem_bench.tui_timings --embedder none --big 3000 --owner mcp

The big-scope pass reads the list through ``row_count``, ``cursor_row`` and ``move_cursor``, which Textual's
DataTable and pcmem's ListTable both have, so the same bench measures a checkout from before the list widget::

    PYTHONPATH=/tmp/old/pkgs python -m pcmem_bench.tui_timings --big 3000 10000   # pkgs/pcmem_tui -> the old tui/
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pcmem
from pcmem import NewEntry, RememberRequest
from pcmem_bench import programs
from pcmem_bench.tui_owner import start_mcp_owner, stop_mcp_owner

SCOPES = ("project", "people", "ops", "旅行-notes")
#: The scope the 500-entry pass opens, searches and writes to (125 entries).
SMALL_SCOPE = min(SCOPES)
SIZE = (120, 36)
#: Seconds a person takes to type a search query (the bench sets the field at once; not counted in any figure).
TYPING = 1.5
SUBJECTS = ("the release", "the staging cluster", "Marco", "Priya", "the Porto venue", "the nightly backup",
            "the billing export", "the search index", "the onboarding doc", "the API gateway")
VERBS = ("moves to", "depends on", "was reviewed with", "must be checked before", "is owned by", "blocks")
WHEN = ("Tuesdays", "the 14:00 check", "the end of March", "every sprint", "the quarterly audit")
CJK = ("東京の会議は{n}日に変更されました。", "大阪の倉庫は{n}月から新しい担当者が管理します。",
       "京都の旅館を{n}名で予約しました。", "上海办公室的网络在{n}号维护。", "北京的客户希望{n}点开会。")


def _texts(scope: str, count: int) -> list[str]:
    if scope.startswith("旅行"):
        return [CJK[i % len(CJK)].format(n=i % 28 + 1) + f" 参照番号 {i}." for i in range(count)]
    return [f"{SUBJECTS[i % len(SUBJECTS)].capitalize()} {VERBS[(i // 10) % len(VERBS)]} "
            f"{SUBJECTS[(i * 7 + 3) % len(SUBJECTS)]} on {WHEN[i % len(WHEN)]} (note {i} in {scope})."
            for i in range(count)]


def seed(path: Path, entries: int, **options: Any) -> None:
    """``entries`` spread over four scopes, written in batches of 25 so each scope has a history of revisions."""
    per_scope = entries // len(SCOPES)
    with pcmem.open(path, **options) as runtime:
        for scope in SCOPES:
            memory, texts = runtime.memory.for_scope(scope), _texts(scope, per_scope)
            for start in range(0, len(texts), 25):
                batch = tuple(NewEntry(text=text, kind="fact") for text in texts[start:start + 25])
                memory.remember(RememberRequest(entries=batch))


async def _until(pilot: Any, done: Callable[[], bool], timeout: float = 120.0, *, idle: bool = True) -> None:
    """Poll (5 ms) until ``done()``, then let the screen repaint once. ``idle``: and wait (up to 1 s) for the
    process to go idle, as a pilot's pause does; not while work the user does not wait for goes on in the
    background (the rest of a big scope), which would count that work too."""
    deadline = time.perf_counter() + timeout
    while not done():
        if time.perf_counter() > deadline:
            raise TimeoutError("the screen did not show the result in time")
        await asyncio.sleep(0.005)
    if idle:
        await pilot.pause()
    else:
        await pilot._wait_for_screen()  # every message handled; then paint, as the screen's refresh timer would
        pilot.app.screen._on_timer_update()


async def _send_key(pilot: Any, key: str, character: str | None) -> None:
    """A key press as the terminal sends it. ``pilot.press`` then waits for the process to go idle (up to 2 s),
    which a page shown while the rest of a scope is read never is: a figure taken through it counts the rest."""
    from textual import events

    event = events.Key(key, character)
    event.set_sender(pilot.app)
    pilot.app._driver.send_message(event)
    await asyncio.sleep(0)


def _table(app: Any) -> Any:
    """The screen's list: pcmem's ListTable, or Textual's DataTable in a checkout from before it."""
    tables = app.screen.query("ListTable") or app.screen.query("DataTable")
    return tables.first() if tables else None


def _rows(app: Any) -> int:
    table = _table(app)
    return table.row_count if table is not None else 0


def _search_key(screen: Any) -> str:
    """``S`` since ``/`` filters every list; ``/`` before."""
    return "S" if any(getattr(binding, "key", "") == "S" for binding in type(screen).BINDINGS) else "slash"


def _move_to(table: Any, key: str) -> None:
    keys = table.row_keys if hasattr(table, "row_keys") else [row.key.value for row in table.ordered_rows]
    table.move_cursor(row=keys.index(key))


def _check_role(app: Any, role: str | None) -> None:
    """The pass measures what it says: the TUI as the store's owner, or as a client of another process."""
    shown = app.session.store_role() if getattr(app, "session", None) is not None else None
    if role is not None and shown is not None and not shown.startswith(role):
        raise RuntimeError(f"the TUI was to be the store's {role} but is {shown}")


async def open_scope(pilot: Any, scope: str) -> float:
    """Milliseconds to open ``scope`` from the scopes screen, picked by name: the first row is "big-10000" in a
    store seeded with ``--big`` too, and the 500-entry pass measured a 10,000-entry scope then (``SMALL_SCOPE`` is
    the first row without ``--big``)."""
    app = pilot.app
    _move_to(_table(app), scope)
    started = time.perf_counter()
    await pilot.press("enter")
    await _until(pilot, lambda: type(app.screen).__name__ == "EntriesScreen" and _rows(app) > 0)
    return (time.perf_counter() - started) * 1000


async def measure(path: Path, role: str | None = None, **options: Any) -> dict[str, float]:
    """One pass over the interactions; milliseconds by name. ``role``: "owner" or "client", checked."""
    from textual.widgets import Input, TextArea

    from pcmem_tui.app import make_app

    timings: dict[str, float] = {}

    def mark(name: str, since: float) -> None:
        timings[name] = (time.perf_counter() - since) * 1000

    started = time.perf_counter()
    app = make_app(path, **options)
    async with app.run_test(size=SIZE) as pilot:
        await _until(pilot, lambda: type(app.screen).__name__ == "ScopesScreen" and _rows(app) > 0)
        mark("start to first screen", started)
        _check_role(app, role)

        timings["open scope"] = await open_scope(pilot, SMALL_SCOPE)

        await pilot.press("down", "down")
        started = time.perf_counter()
        await pilot.press("enter")
        await _until(pilot, lambda: type(app.screen).__name__ == "EntryScreen" and _rows(app) > 0)
        mark("open entry", started)
        await pilot.press("escape")
        await _until(pilot, lambda: type(app.screen).__name__ == "EntriesScreen")

        entries: Any = app.screen
        head = entries.manifest.revision
        started = time.perf_counter()
        await pilot.press("left_square_bracket")
        await _until(pilot, lambda: entries.manifest.revision == head - 1)
        mark("step to a past revision", started)
        await pilot.press("h")
        await _until(pilot, lambda: entries.manifest.revision == head)

        for name, query in (("first search", "release Tuesdays"), ("later search", "Priya backup")):
            await pilot.press(_search_key(entries))
            await _until(pilot, lambda: type(app.screen).__name__ == "SearchScreen")
            screen = app.screen
            screen.query_one("#query", Input).value = query
            screen.query_one("#query", Input).focus()
            await asyncio.sleep(TYPING)  # a person types the query: the app may use the time, the bench does not count it
            started = time.perf_counter()
            await pilot.press("enter")
            await _until(pilot, lambda: getattr(screen, "page", None) is not None)
            mark(name, started)
            await pilot.press("escape")
            await _until(pilot, lambda: type(app.screen).__name__ == "EntriesScreen")

        entries_screen: Any = app.screen
        before = entries_screen.manifest.head
        await pilot.press("n")
        await _until(pilot, lambda: type(app.screen).__name__ == "RememberScreen")
        app.screen.query_one(TextArea).text = "The bench wrote this entry."
        started = time.perf_counter()
        await pilot.press("ctrl+s")
        # the head first: `app.screen is entries_screen` would narrow entries_screen to a plain Screen for mypy
        await _until(pilot, lambda: entries_screen.manifest.head > before and app.screen is entries_screen)
        mark("a write (remember)", started)
    return timings


async def first_search(pilot: Any, query: str, mode: str) -> float:
    """Milliseconds from enter in the query until the hits are shown: the process's first search of the scope on
    screen (the user typed for :data:`TYPING` seconds first, as a person does); back to the list afterwards."""
    from textual.widgets import Input, Select

    app = pilot.app
    back_to = app.screen
    await pilot.press(_search_key(back_to))
    await _until(pilot, lambda: type(app.screen).__name__ == "SearchScreen")
    screen = app.screen
    screen.query_one("#mode", Select).value = mode
    screen.query_one("#query", Input).value = query
    screen.query_one("#query", Input).focus()
    await asyncio.sleep(TYPING)
    started = time.perf_counter()
    await pilot.press("enter")
    await _until(pilot, lambda: getattr(screen, "page", None) is not None, idle=False)
    elapsed = (time.perf_counter() - started) * 1000
    if screen.page.mode != mode and mode != "auto":
        raise RuntimeError(f"the search ran in {screen.page.mode} mode, not {mode}")
    app.pop_screen()
    await _until(pilot, lambda: app.screen is back_to)
    return elapsed


def _key_at(table: Any, row: int) -> str:
    return table.row_keys[row] if hasattr(table, "row_keys") else table.ordered_rows[row].key.value


async def press_down(pilot: Any) -> float:
    """Milliseconds from ``j``'s arrival until the cursor is on the row below and the screen is painted.

    The key is posted as a terminal's key arrives (``pilot.press`` also waits until the whole process's CPU is idle,
    and with the TUI as the store's owner its process also runs the writer's writes on the owner's threads: that
    wait was measured, not the screen). The row below is named by its key, so a write that adds a row above while
    the key is in flight moves neither the target nor the figure. On the last row ``j`` cannot move: refused, where
    a bench that pressed it there measured the writer's interval (a new row above shifts the cursor's row)."""
    from textual import events

    app = pilot.app
    table = _table(app)
    row = table.cursor_row
    if row + 1 >= table.row_count:
        raise ValueError(f"the cursor is on the last row ({row + 1} of {table.row_count}): j cannot move it")
    below = _key_at(table, row + 1)
    started = time.perf_counter()
    app.post_message(events.Key("j", "j"))
    deadline = started + 30.0
    while _key_at(table, table.cursor_row) != below:
        if time.perf_counter() > deadline:
            raise TimeoutError("j did not move the cursor")
        await asyncio.sleep(0.001)
    await pilot.pause(0)  # paint what changed now
    return (time.perf_counter() - started) * 1000


class LoopStalls:
    """The longest the event loop went without waking a ``tick`` timer (ms), while the block runs: what any key
    waits behind at worst (a live refresh applying a write, a redraw), apart from its own handling."""

    def __init__(self, tick: float = 0.005) -> None:
        self.tick, self.worst = tick, 0.0
        self._task: asyncio.Task[None] | None = None

    def __enter__(self) -> LoopStalls:
        self._task = asyncio.get_running_loop().create_task(self._watch())
        return self

    def __exit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()

    async def _watch(self) -> None:
        while True:
            started = time.perf_counter()
            await asyncio.sleep(self.tick)
            self.worst = max(self.worst, (time.perf_counter() - started - self.tick) * 1000)


BIG_SCOPE = "big-{}"


def seed_big(path: Path, size: int, **options: Any) -> None:
    """One scope of ``size`` entries, in batches of 500, with the store's embedder (``options`` as :func:`seed`'s):
    a store seeded with vectors refuses entries written without them, and the first hybrid search of a big scope
    is one of the figures."""
    with pcmem.open(path, **options) as runtime:
        memory, texts = runtime.memory.for_scope(BIG_SCOPE.format(size)), _texts("big", size)
        for start in range(0, size, 500):
            memory.remember(RememberRequest(entries=tuple(NewEntry(text=t) for t in texts[start:start + 500])))


async def measure_big(path: Path, size: int, role: str | None = None, **options: Any) -> dict[str, float]:
    """Open the big scope, sort it, type one filter character, press ``j`` while a writer process writes, step to
    the previous revision and back, and sit idle."""
    from pcmem_tui.app import make_app

    timings: dict[str, float] = {}
    scope = BIG_SCOPE.format(size)
    started = time.perf_counter()
    app = make_app(path, **options)
    async with app.run_test(size=SIZE) as pilot:
        await _until(pilot, lambda: type(app.screen).__name__ == "ScopesScreen" and _rows(app) > 0, idle=False)
        timings[f"{size}: start until scopes are listed"] = (time.perf_counter() - started) * 1000
        await pilot.pause()
        _check_role(app, role)
        _move_to(_table(app), scope)
        # the first open in this process (a pass of its own): the first rows drawn, then every row loaded
        started = time.perf_counter()
        await _send_key(pilot, "enter", "\r")
        await _until(pilot, lambda: type(app.screen).__name__ == "EntriesScreen" and _rows(app) > 0, idle=False)
        timings[f"{size}: open scope (first rows)"] = (time.perf_counter() - started) * 1000
        await _until(pilot, lambda: type(app.screen).__name__ == "EntriesScreen" and _rows(app) >= size)
        timings[f"{size}: open scope (every row)"] = (time.perf_counter() - started) * 1000
        entries: Any = app.screen
        mode = "fts" if options.get("embedder", "auto") is None else "hybrid"
        timings[f"{size}: first {mode} search"] = await first_search(pilot, "backup Priya Tuesdays", mode)
        head = entries.manifest.revision
        # the seeded revisions change 500 entries each: more than a patch, so the past revision is read whole
        started = time.perf_counter()
        await _send_key(pilot, "left_square_bracket", "[")
        await _until(pilot, lambda: entries.manifest.revision == head - 1 and _rows(app) > 0, idle=False)
        timings[f"{size}: step to a past revision read whole (first rows)"] = (time.perf_counter() - started) * 1000
        await _until(pilot, lambda: getattr(entries.manifest, "complete", True))
        await pilot.press("h")
        await _until(pilot, lambda: entries.manifest.revision == head and _rows(app) >= size)
        started = time.perf_counter()
        await pilot.press("s")
        await pilot.pause()
        timings[f"{size}: sort"] = (time.perf_counter() - started) * 1000
        await pilot.press("f", "n", "o", "t", "e", " ")
        await pilot.pause()
        started = time.perf_counter()
        await pilot.press("7")
        await _until(pilot, lambda: 0 < _rows(app) < size)
        timings[f"{size}: filter keystroke"] = (time.perf_counter() - started) * 1000
        await pilot.press("escape")
        await _until(pilot, lambda: _rows(app) >= size)
        _table(app).focus()
        await pilot.press("g")  # from the first row down: 20 rows below for 20 presses
        embedder = "none" if options.get("embedder", "auto") is None else "auto"
        writer = subprocess.Popen(programs.command("scope_writer", str(path), scope, embedder), stdout=subprocess.PIPE,
                                  text=True)
        try:
            assert writer.stdout is not None and writer.stdout.readline().strip() == "writing"
            presses = []
            with LoopStalls() as stalls:
                for _ in range(20):
                    presses.append(await press_down(pilot))
                    await asyncio.sleep(0.2)
        finally:
            writer.kill()
            writer.wait()
        timings[f"{size}: j while writing (median)"] = statistics.median(presses)
        timings[f"{size}: j while writing (worst)"] = max(presses)
        timings[f"{size}: longest loop stall while writing"] = stalls.worst
        await asyncio.sleep(1.5)  # the writer's last write is seen and loaded
        head = entries.manifest.revision
        # after the writer: its revisions change one entry each, as an agent's do
        for name, key, revision in (("step to the previous revision", "left_square_bracket", head - 1),
                                    ("step back to the head", "right_square_bracket", head)):
            started = time.perf_counter()
            await pilot.press(key)
            await _until(pilot, lambda: entries.manifest.revision == revision)  # noqa: B023 - awaited here
            timings[f"{size}: {name}"] = (time.perf_counter() - started) * 1000
        await asyncio.sleep(1.0)  # the last reload settles
        cpu, wall = time.process_time(), time.perf_counter()
        await asyncio.sleep(5.0)
        timings[f"{size}: idle CPU %"] = 100 * (time.process_time() - cpu) / (time.perf_counter() - wall)
    return timings


def _one_pass(args: argparse.Namespace, path: Path, app_options: dict[str, Any]) -> dict[str, float]:
    """One pass: the interactions on the seeded scopes, then each big scope, each in a fresh process (nothing
    loaded or cached by an earlier part: the embedder, pydantic's validators, Textual's styles, a read manifest)."""
    timings: dict[str, float] = {}
    owner = start_mcp_owner(path) if args.owner == "mcp" else None
    try:
        for part in ("small", *map(str, args.big)):
            command = [sys.executable, "-m", "pcmem_bench.tui_timings", "--pass-on", str(path), "--part", part,
                       "--embedder", args.embedder, "--owner", args.owner]
            result = subprocess.run(command, capture_output=True, text=True, check=False)
            if result.returncode != 0:
                raise RuntimeError(f"a bench pass failed:\n{result.stderr[-2000:]}")
            timings.update(json.loads(result.stdout.strip().splitlines()[-1]))
    finally:
        if owner is not None:
            stop_mcp_owner(owner)
    return timings


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m pcmem_bench.tui_timings", description=__doc__.split("\n")[0])
    parser.add_argument("--entries", type=int, default=500)
    parser.add_argument("--runs", type=int, default=3, help="passes; the median is reported")
    parser.add_argument("--embedder", default="auto", help="'auto' (the default model) or 'none'")
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "pcmem-tui-bench")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--big", type=int, nargs="*", default=[], metavar="N",
                        help="also measure one scope of N entries each (e.g. --big 3000 10000)")
    parser.add_argument("--owner", choices=("tui", "mcp"), default="tui",
                        help="who opens the store first and owns it: the TUI (the writer is its client), or a "
                             "`pcmem mcp` started before it (the TUI is a client for every interaction)")
    parser.add_argument("--pass-on", type=Path, help=argparse.SUPPRESS)  # one part of a pass on this store
    parser.add_argument("--part", default="small", help=argparse.SUPPRESS)  # "small", or a big scope's size
    args = parser.parse_args(argv)
    options: dict[str, Any] = {"embedder": None} if args.embedder == "none" else {}
    app_options = options
    if args.pass_on is not None:
        role = "client" if args.owner == "mcp" else "owner"
        part = measure(args.pass_on, role=role, **app_options) if args.part == "small" else \
            measure_big(args.pass_on, int(args.part), role=role, **app_options)
        print(json.dumps(asyncio.run(part)))
        return
    template = args.dir / f"template-{args.entries}-{args.embedder}{''.join(f'-{n}' for n in args.big)}.duckdb"
    if not template.exists():
        args.dir.mkdir(parents=True, exist_ok=True)
        seed(template, args.entries, **options)
        for size in args.big:
            seed_big(template, size, **options)
    runs = []
    for run in range(args.runs):
        path = args.dir / f"run-{run}.duckdb"
        for stale in (path, path.with_name(path.name + ".wal")):  # a log left by an earlier pass is not this store's
            stale.unlink(missing_ok=True)
        path.write_bytes(template.read_bytes())  # every pass starts from the same store (the write adds to it)
        runs.append(_one_pass(args, path, app_options))
    medians = {name: statistics.median(run[name] for run in runs) for name in runs[0]}
    best = {name: min(run[name] for run in runs) for name in runs[0]}
    if args.json:
        print(json.dumps({name: {"median_ms": round(ms, 1), "best_ms": round(best[name], 1)}
                          for name, ms in medians.items()}))
        return
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{args.entries} entries in {len(SCOPES)} scopes, embedder {args.embedder}, {SIZE[0]}x{SIZE[1]}, "
          f"{'the TUI owns the store' if args.owner == 'tui' else 'the TUI is a client of pcmem mcp'}, "
          f"median of {args.runs} runs, load average {load:.1f} on {os.cpu_count()} CPUs")
    for name, ms in medians.items():
        unit = "  " if name.endswith("%") else "ms"
        print(f"  {name:<40} {ms:8.0f} {unit}  best {best[name]:6.0f} ms  (runs: {', '.join(f'{run[name]:.0f}' for run in runs)})")


if __name__ == "__main__":
    main()
