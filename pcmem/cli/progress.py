"""Progress bars on stderr, shown only to people (never in --json mode or when stderr is not a terminal)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from pcmem.cli import render
from pcmem.types.progress import Progress as ProgressCallback
from pcmem.types.progress import StageProgress


def _ignore(done: int, total: int) -> None:
    pass


@contextmanager
def progress_bar(label: str, *, enabled: bool = True, bytes_: bool = False) -> Iterator[ProgressCallback]:
    """Yields ``advance(done, total)`` for a library progress callback (a no-op, without loading rich, when
    ``enabled`` is false)."""
    if not enabled:
        yield _ignore
        return
    from rich.progress import BarColumn, DownloadColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    err_console = render.err_console
    counter = DownloadColumn() if bytes_ else MofNCompleteColumn()
    with Progress(TextColumn(label), BarColumn(), counter, TimeRemainingColumn(), console=err_console,
                  disable=not (enabled and err_console.is_terminal), transient=True) as progress:
        task = progress.add_task(label, total=None)

        def advance(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        yield advance


@contextmanager
def stage_progress(*, enabled: bool = True) -> Iterator[StageProgress]:
    """Yields ``report(stage, done, total)`` for multi-step work (one bar whose label follows the stage)."""
    from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn

    err_console = render.err_console
    with Progress(TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(), TimeElapsedColumn(),
                  console=err_console, disable=not (enabled and err_console.is_terminal), transient=True) as progress:
        task = progress.add_task("starting", total=None)

        def report(stage: str, done: int, total: int) -> None:
            progress.update(task, description=stage, completed=done, total=total)

        yield report
