"""Progress bars on stderr, shown only to people (never in --json mode or when stderr is not a terminal)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from pcmem.cli import render
from pcmem.types.progress import Progress as ProgressCallback
from pcmem.types.progress import StageProgress


def _ignore(done: int, total: int) -> None:
    pass


def _ignore_stage(stage: str, done: int, total: int) -> None:
    pass


@contextmanager
def progress_bar(label: str, *, enabled: bool = True, bytes_: bool = False) -> Iterator[ProgressCallback]:
    """Yields ``advance(done, total)`` for a library progress callback (a no-op, without loading rich, when
    ``enabled`` is false)."""
    if not (enabled and render.err_console.is_terminal):
        # not even a disabled rich Progress: before rich 15 one wrote a blank line to stderr when it stopped
        yield _ignore
        return
    err_console = render.err_console
    from rich.progress import BarColumn, DownloadColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    counter = DownloadColumn() if bytes_ else MofNCompleteColumn()
    with Progress(TextColumn(label), BarColumn(), counter, TimeRemainingColumn(), console=err_console,
                  transient=True) as progress:
        task = progress.add_task(label, total=None)

        def advance(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        yield advance


@contextmanager
def stage_progress(*, enabled: bool = True) -> Iterator[StageProgress]:
    """Yields ``report(stage, done, total)`` for multi-step work (one bar whose label follows the stage)."""
    if not (enabled and render.err_console.is_terminal):
        yield _ignore_stage
        return
    err_console = render.err_console
    from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(), TimeElapsedColumn(),
                  console=err_console, transient=True) as progress:
        task = progress.add_task("starting", total=None)

        def report(stage: str, done: int, total: int) -> None:
            progress.update(task, description=stage, completed=done, total=total)

        yield report
