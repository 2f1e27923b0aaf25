"""Widgets shared by the screens: the status line, the progress strip, the store bar and short ids."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.timer import Timer
from textual.widgets import Footer, Label, ProgressBar, Static

if TYPE_CHECKING:
    from pcmem_tui.session import Session


def key_footer() -> Footer:
    """Compact, without the command palette key (ctrl+p still works): 80 columns hold a screen's keys."""
    return Footer(compact=True, show_command_palette=False)


class StatusLine(Static):
    """One line under the content: what just happened, or the error that stopped it."""

    message = ""

    def info(self, text: str) -> None:
        self._show(text, error=False)

    def error(self, text: str) -> None:
        self._show(f"✗ {text}", error=True)

    def _show(self, text: str, *, error: bool) -> None:
        self.message = text
        self.set_class(error, "error")
        self.update(Text(text))


class StoreBar(Static):
    """The store this screen shows and how current it is: file, how it is reached, read-only, last read, holder."""

    def show(self, session: Session | None) -> None:
        if session is None:
            return
        fresh = session.freshness
        parts = [_short_path(session.path) if session.path else "store", session.store_role()]
        if session.read_only():
            parts.append("read-only")
        line = Text(" · ".join(parts) + " · ", style="dim")
        line.append(fresh.describe(), style="bold yellow" if fresh.stale else "dim")
        if session.embedder_loading:
            line.append(f" · ◷ loading {session.embedder_loading}…", style="yellow")
        elif session.embedder_failure:
            line.append(f" · ⚠ {session.embedder_failure}", style="bold yellow")
        self.set_class(fresh.stale, "stale")
        if line != self.content:
            self.update(line, layout=False)  # one line high (app.tcss): a new read time needs no layout of the screen


def _short_path(path: Path) -> str:
    """The path with the home folder as ``~`` (80 columns: the file name matters most, the folder next)."""
    home = str(Path.home())
    shown = str(path)
    return "~" + shown[len(home):] if shown.startswith(home + "/") else shown


class WorkProgress(Horizontal):
    """What long work is doing: a label, and a bar when the work knows its total (reranking n of m candidates).

    Work of unknown length shows its stage and the seconds it has waited instead of Textual's indeterminate bar:
    that bar redraws 15 times a second for as long as it exists, hidden or not, which kept an idle TUI busy.
    """

    def compose(self) -> ComposeResult:
        yield Label(id="progress-stage")
        yield ProgressBar(total=1, id="progress-bar", show_eta=False)

    def on_mount(self) -> None:
        self.display = False
        self._started = 0.0
        self._stage = ""
        self._ticker: Timer | None = None

    def advance(self, stage: str, done: int, total: int) -> None:
        if not self.display or stage != self._stage:
            self._started = time.monotonic()
        self._stage = stage
        self.display = True
        bar = self.query_one(ProgressBar)
        bar.display = total > 0
        if total > 0:
            bar.update(total=total, progress=done)
        self._show(f"{stage} {done}/{total}" if total > 0 and stage != "verifying model" else stage)
        if total == 0 and self._ticker is None:  # say how long it has waited, once a second, only while it waits
            self._ticker = self.set_interval(1.0, self._tick, name="progress-ticker")

    def _tick(self) -> None:
        waited = time.monotonic() - self._started
        if self.display and waited >= 1:
            self._show(f"{self._stage} {waited:.0f} s")

    def _show(self, text: str) -> None:
        self.query_one("#progress-stage", Label).update(Text(text))

    @property
    def stage(self) -> str:
        return self._stage

    def finish(self) -> None:
        self.display = False
        self._stage = ""
        if self._ticker is not None:
            self._ticker.stop()
            self._ticker = None


GENERATED_ID = re.compile(r"^[a-z]+_[0-9a-z]{26}$")


def short_id(entry_id: str, width: int = 12) -> str:
    """Generated ids (``ent_`` + 10 time characters + 16 random) share their start within a batch, so they show
    their random end (``…5ra7kq2m``). Keys of one's own share a prefix just as often (``proj-lumen-001``,
    ``proj-lumen-002``): they keep a little of their start and as much of their end as fits, cut in the middle
    (``proj…en-002``), so ids that differ only at the end never look alike."""
    if len(entry_id) <= width:
        return entry_id
    if GENERATED_ID.match(entry_id):
        return "…" + entry_id[-(min(width, 9) - 1):]
    if width < 5:
        return entry_id[: width - 1] + "…"
    head = max(1, (width - 1) // 3)
    return entry_id[:head] + "…" + entry_id[-(width - 1 - head):]


