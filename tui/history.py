"""Search history: ``↑``/``↓`` in the query field recall the queries searched before, as in a shell.

Kept by the app for its lifetime (every search screen shares it), newest last, each query once. Walking back keeps
what was being typed: ``↓`` past the newest query brings it back.
"""

from __future__ import annotations

from textual.binding import Binding
from textual.widgets import Input

#: Queries kept; the oldest go first.
MAX_QUERIES = 200


class SearchHistory:
    def __init__(self) -> None:
        self.queries: list[str] = []

    def add(self, query: str) -> None:
        query = query.strip()
        if query:
            if query in self.queries:
                self.queries.remove(query)
            self.queries.append(query)
            del self.queries[:-MAX_QUERIES]


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
