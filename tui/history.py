"""Search history: ``↑``/``↓`` in the query field recall the queries searched before, as in a shell, across sessions.

Newest last, each query once, at most :data:`MAX_QUERIES`. Walking back keeps what was being typed: ``↓`` past the
newest query brings it back.

A store opened from a path keeps its history in a small file of the user's state folder (``$XDG_STATE_HOME/pcmem/
search-history/``, by default ``~/.local/state/pcmem/search-history/``), one file per store, named after the store's
path; never inside the store file, which holds the agents' memory and may be shared, copied or opened read-only.
A store opened read-only keeps its history too: the file is the user's, not the store's (reading a store is what the
history helps with). After each search the file is rewritten whole (atomically) with what other sessions on the same
store added meanwhile merged in; a missing, unreadable or damaged file counts as empty and is replaced by the next
search. When the folder cannot be written the history lasts the session, and the search screen says so once.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from pathlib import Path

from textual.binding import Binding
from textual.widgets import Input

#: Queries kept; the oldest go first.
MAX_QUERIES = 200
FOLDER = "search-history"


def history_file(store: str | Path) -> Path:
    """The file that keeps ``store``'s search history."""
    return state_file(store, FOLDER)


def state_file(store: str | Path, folder: str) -> Path:
    """The file of the user's state ``folder`` kept for ``store``: the store's name (readable) and a digest of its
    full path (two stores of one name in different folders keep apart)."""
    import platformdirs  # the state folder: $XDG_STATE_HOME/pcmem, else ~/.local/state/pcmem (each OS's own elsewhere)

    resolved = Path(store).expanduser().resolve()
    digest = hashlib.sha256(str(resolved).encode()).hexdigest()[:16]
    name = re.sub(r"[^\w.-]", "_", resolved.stem)[:40]
    return Path(platformdirs.user_state_dir("pcmem", appauthor=False)) / folder / f"{name}-{digest}.json"


def _read(file: Path) -> list[str]:
    """The queries in ``file``; none when it is missing, unreadable or not what this module writes."""
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # ValueError: damaged JSON or bytes that are not UTF-8
        return []
    queries = data.get("queries") if isinstance(data, dict) else None
    if not isinstance(queries, list):
        return []
    return [query for query in queries if isinstance(query, str) and query.strip()][-MAX_QUERIES:]


def _write(file: Path, queries: list[str]) -> None:
    """Rewrite ``file`` at once (a crash leaves the old file or the new one, never half of one); private to the user."""
    _private_folders(file.parent)
    descriptor, temporary = tempfile.mkstemp(dir=file.parent, prefix=f".{file.name}.", suffix=".tmp")
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as out:
            json.dump({"queries": queries}, out, ensure_ascii=False)
        os.replace(temporary, file)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _private_folders(folder: Path) -> None:
    """Create ``folder`` and each missing parent 0700, whatever the umask (``mkdir(parents=True)`` made the state
    folder ``pcmem`` 0755, 0777 under umask 000): the queries searched are the user's alone."""
    missing = []
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    for new in reversed(missing):
        try:
            new.mkdir(mode=0o700)
        except FileExistsError:
            continue
        new.chmod(0o700)  # the umask can take the owner's bits away too


class SearchHistory:
    """The queries searched; kept in ``file`` across sessions (``None``: this session only)."""

    def __init__(self, file: Path | None = None) -> None:
        self.file = file
        self.queries: list[str] = _read(file) if file is not None else []
        self._unsaid: str | None = None  # why the file could not be written, until the screen has said it
        self._said = False

    def add(self, query: str) -> None:
        query = query.strip()
        if not query:
            return
        queries = self.queries
        if self.file is not None:  # what other sessions on this store searched since: older than this session's
            mine = set(queries)
            queries = [other for other in _read(self.file) if other not in mine] + queries
        self.queries = [*(kept for kept in queries if kept != query), query][-MAX_QUERIES:]
        if self.file is not None:
            try:
                _write(self.file, self.queries)
            except OSError as error:
                if not self._said:
                    self._unsaid = f"search history kept for this session only: cannot write {self.file} " \
                                   f"({error.strerror or error})"

    def unsaid_problem(self) -> str | None:
        """Why the history is not being kept, the first time it is asked after it happened (then ``None``)."""
        problem, self._unsaid = self._unsaid, None
        if problem is not None:
            self._said = True
        return problem


class HistoryInput(Input):
    """An input whose ``↑``/``↓`` step through a :class:`SearchHistory`."""

    BINDINGS = [Binding("up", "older", "Older query", show=False),
                Binding("down", "newer", "Newer query", show=False)]

    def __init__(self, history: SearchHistory, value: str = "", **options: object) -> None:
        super().__init__(value, **options)  # type: ignore[arg-type]
        self.history = history
        self._position: int | None = None  # index into the history while stepping; None: the text being typed
        self._typed = value

    def action_older(self) -> None:
        self._step(-1)

    def action_newer(self) -> None:
        self._step(1)

    def _step(self, delta: int) -> None:
        queries = self.history.queries
        if self._position is None:
            if delta > 0 or not queries:
                return
            self._typed, position = self.value, len(queries) - 1
        else:
            position = self._position + delta
            if position < 0:
                return
        if position >= len(queries):
            self._position, self.value = None, self._typed
        else:
            self._position, self.value = position, queries[position]
        self.cursor_position = len(self.value)

    def rearm(self) -> None:
        """After a search: the next ``↑`` starts from the newest query again."""
        self._position = None
