"""Open an entry's text in the user's own editor (``$VISUAL``, else ``$EDITOR``: ``pcmem tui`` reads them through
pcmem's settings and gives the app the command line), as ``git commit`` does.

The text goes to a file in a private temporary folder (removed afterwards); the TUI hands the terminal to the
editor (Textual's ``App.suspend``) and reads the file back when the editor exits. A text that cannot be changed (a past
version, a retired entry) is written read-only, so the editor says so before any typing is lost.
"""

from __future__ import annotations

import re
import shlex
import stat
import subprocess
import tempfile
from pathlib import Path

from textual.app import App, SuspendNotSupported

from pcmem import InputError


class EditorError(InputError):
    """No editor is configured, it cannot be started, or it exited with an error: said in one line."""


def editor_command(line: str | None) -> list[str]:
    """The editor's command line as arguments (it may carry its own, e.g. ``code --wait``)."""
    if not line:
        raise EditorError("set $EDITOR (or $VISUAL) to open texts in your editor, e.g. export EDITOR=vim")
    try:
        return shlex.split(line)
    except ValueError as error:
        raise EditorError(f"the editor is not a command line ({error}): {line!r}") from None


def edit_text(app: App[object], editor: str | None, text: str, name: str, *, read_only: bool) -> str:
    """Run ``editor`` on ``text`` (in a file called after ``name``) and return the file's text when it exits, with
    the one final newline editors add removed. Raises EditorError."""
    command = editor_command(editor)
    with tempfile.TemporaryDirectory(prefix="pcmem-") as folder:
        path = Path(folder) / f"{re.sub(r'[^A-Za-z0-9._-]+', '_', name)[:80] or 'entry'}.txt"
        path.write_text(text + "\n", encoding="utf-8")
        if read_only:
            path.chmod(stat.S_IRUSR)
        status = _run(app, [*command, str(path)])
        if status != 0:
            raise EditorError(f"{command[0]} exited with status {status}: nothing was taken from it")
        edited = path.read_text(encoding="utf-8")
    return edited[:-1] if edited.endswith("\n") else edited


def _run(app: App[object], command: list[str]) -> int:
    try:
        with app.suspend():  # the editor gets the terminal; the TUI redraws when it exits
            return subprocess.run(command, check=False).returncode
    except SuspendNotSupported:
        raise EditorError("this terminal cannot hand the screen to an editor (Textual in a browser?)") from None
    except FileNotFoundError:
        raise EditorError(f"cannot start the editor {command[0]!r}: no such program") from None
    except OSError as error:
        raise EditorError(f"cannot start the editor {command[0]!r}: {error}") from None
