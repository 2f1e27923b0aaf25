"""Timings a user feels in ``pcmem tui``, measured through Textual's pilot on one seeded store.

One command reproduces them (the store is built once and reused from ``--dir``)::

    python -m pcmem_tui.bench                     # 500 entries in 4 scopes (one of them CJK), real embedder
    python -m pcmem_tui.bench --embedder none     # without vectors (FTS only)

Each figure is wall time from the key press (or app start) until the screen shows the result (the worker finished,
its message was handled and the screen repainted): start to first screen, open scope (``project``, 125 entries),
open entry, first and later search, a write, stepping to a past revision. Every pass runs in a fresh process, so the
first search pays what a user's first search pays (loading the embedder). The app runs headless at 120×36, as in
the snapshot tests.

``--big 3000 10000`` adds one scope of each size, each measured in a fresh process of its own: the first open (the
first rows drawn, then every row loaded), stepping to a past revision read whole (first rows), sort, one filter
keystroke, ``j`` while another process writes to the scope every 0.75 s (median and worst of 20 presses), stepping to
the previous revision and back, and the process's CPU while the scope sits idle on screen (5 s). "First rows" are
timed from a key sent as a terminal sends it, not through ``pilot.press``, which waits for the process to go idle and
so would count the rest of the scope being read in the background::

    python -m pcmem_tui.bench --embedder none --big 3000 10000

The big-scope pass reads the list through ``row_count``, ``cursor_row`` and ``move_cursor``, which Textual's
DataTable and pcmem's ListTable both have, so the same bench measures a checkout from before the list widget::

    PYTHONPATH=/tmp/old/pkgs python -m pcmem_tui.bench --big 3000 10000   # pkgs/pcmem_tui -> the old tui/
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

SCOPES = ("project", "people", "ops", "旅行-notes")
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
    with pcmem.open_sync(path, **options) as runtime:
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


async def measure(path: Path, **options: Any) -> dict[str, float]:
    """One pass over the interactions; milliseconds by name."""
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

        _move_to(_table(app), SCOPES[0])  # by name: a store seeded with --big lists its big scopes first
        started = time.perf_counter()
        await pilot.press("enter")
        await _until(pilot, lambda: type(app.screen).__name__ == "EntriesScreen" and _rows(app) > 0)
        mark("open scope", started)

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
        await _until(pilot, lambda: app.screen is entries_screen and entries_screen.manifest.head > before)
        mark("a write (remember)", started)
    return timings


BIG_SCOPE = "big-{}"
WRITER = """
import sys, time, pcmem
with pcmem.open_sync(sys.argv[1], embedder=None, shared=True) as runtime:
    memory = runtime.memory.for_scope(sys.argv[2])
    print("writing", flush=True)
    for n in range(100000):
        memory.remember(f"An agent's note number {n}.")
        time.sleep(0.75)
"""


def seed_big(path: Path, size: int) -> None:
    """One scope of ``size`` entries, in batches of 500 (FTS only: the bench measures the list, not vectors)."""
    with pcmem.open_sync(path, embedder=None) as runtime:
        memory, texts = runtime.memory.for_scope(BIG_SCOPE.format(size)), _texts("big", size)
        for start in range(0, size, 500):
            memory.remember(RememberRequest(entries=tuple(NewEntry(text=t) for t in texts[start:start + 500])))


async def measure_big(path: Path, size: int, **options: Any) -> dict[str, float]:
    """Open the big scope, sort it, type one filter character, press ``j`` while a writer process writes, step to
    the previous revision and back, and sit idle."""
    from pcmem_tui.app import make_app

    timings: dict[str, float] = {}
    scope = BIG_SCOPE.format(size)
    app = make_app(path, **options)
    async with app.run_test(size=SIZE) as pilot:
        await _until(pilot, lambda: type(app.screen).__name__ == "ScopesScreen" and _rows(app) > 0)
        _move_to(_table(app), scope)
        # the first open in this process (a pass of its own): the first rows drawn, then every row loaded
        started = time.perf_counter()
        await _send_key(pilot, "enter", "\r")
        await _until(pilot, lambda: type(app.screen).__name__ == "EntriesScreen" and _rows(app) > 0, idle=False)
        timings[f"{size}: open scope (first rows)"] = (time.perf_counter() - started) * 1000
        await _until(pilot, lambda: type(app.screen).__name__ == "EntriesScreen" and _rows(app) >= size)
        timings[f"{size}: open scope (every row)"] = (time.perf_counter() - started) * 1000
        entries: Any = app.screen
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
        writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path), scope], stdout=subprocess.PIPE, text=True)
        try:
            assert writer.stdout is not None and writer.stdout.readline().strip() == "writing"
            presses = []
            for _ in range(20):
                table = _table(app)
                row = table.cursor_row
                started = time.perf_counter()
                await pilot.press("j")
                await _until(pilot, lambda: table.cursor_row != row)
                presses.append((time.perf_counter() - started) * 1000)
                await asyncio.sleep(0.2)
        finally:
            writer.kill()
            writer.wait()
        timings[f"{size}: j while writing (median)"] = statistics.median(presses)
        timings[f"{size}: j while writing (worst)"] = max(presses)
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
    for part in ("small", *map(str, args.big)):
        command = [sys.executable, "-m", "pcmem_tui.bench", "--pass-on", str(path), "--part", part,
                   "--embedder", args.embedder, *(["--exclusive"] if args.exclusive else [])]
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise RuntimeError(f"a bench pass failed:\n{result.stderr[-2000:]}")
        timings.update(json.loads(result.stdout.strip().splitlines()[-1]))
    return timings


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m pcmem_tui.bench", description=__doc__.split("\n")[0])
    parser.add_argument("--entries", type=int, default=500)
    parser.add_argument("--runs", type=int, default=3, help="passes; the median is reported")
    parser.add_argument("--embedder", default="auto", help="'auto' (the default model) or 'none'")
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "pcmem-tui-bench")
    parser.add_argument("--exclusive", action="store_true",
                        help="hold the file (shared=False): separates the TUI's own cost from shared mode's per-read "
                             "open of the file")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--big", type=int, nargs="*", default=[], metavar="N",
                        help="also measure one scope of N entries each (e.g. --big 3000 10000)")
    parser.add_argument("--pass-on", type=Path, help=argparse.SUPPRESS)  # one part of a pass on this store
    parser.add_argument("--part", default="small", help=argparse.SUPPRESS)  # "small", or a big scope's size
    args = parser.parse_args(argv)
    options: dict[str, Any] = {"embedder": None} if args.embedder == "none" else {}
    app_options = {**options, "shared": False} if args.exclusive else options
    if args.pass_on is not None:
        part = measure(args.pass_on, **app_options) if args.part == "small" else \
            measure_big(args.pass_on, int(args.part), **app_options)
        print(json.dumps(asyncio.run(part)))
        return
    template = args.dir / f"template-{args.entries}-{args.embedder}{''.join(f'-{n}' for n in args.big)}.duckdb"
    if not template.exists():
        args.dir.mkdir(parents=True, exist_ok=True)
        seed(template, args.entries, **options)
        for size in args.big:
            seed_big(template, size)
    runs = []
    for run in range(args.runs):
        path = args.dir / f"run-{run}.duckdb"
        for stale in (path, path.with_name(path.name + ".wal")):  # a killed pass may leave its log behind
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
          f"{'exclusive' if args.exclusive else 'shared'} mode, "
          f"median of {args.runs} runs, load average {load:.1f} on {os.cpu_count()} CPUs")
    for name, ms in medians.items():
        unit = "  " if name.endswith("%") else "ms"
        print(f"  {name:<40} {ms:8.0f} {unit}  best {best[name]:6.0f} ms  (runs: {', '.join(f'{run[name]:.0f}' for run in runs)})")


if __name__ == "__main__":
    main()
