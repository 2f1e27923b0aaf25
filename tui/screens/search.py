"""Search one scope or several: query, mode, limit and rerank policy, and filters (kinds, metadata, dates); hits with
rank, score, channels, text and citation."""

from __future__ import annotations

from typing import NamedTuple

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.widgets import Header, Input, Select, Static

from pcmem import SEARCH_MODES, MemoryHit, SearchPage
from pcmem_tui.evidence import Evidence
from pcmem_tui.format import count, hit_detail, one_line, plain, scope_of, searched
from pcmem_tui.history import HistoryInput
from pcmem_tui.messages import SearchDone
from pcmem_tui.screens.base import StoreScreen
from pcmem_tui.screens.entry import EntryScreen
from pcmem_tui.screens.trace import TraceScreen
from pcmem_tui.session import SearchForm
from pcmem_tui.table import Cell, ListTable
from pcmem_tui.widgets import StatusLine, StoreBar, WorkProgress, key_footer

#: The score column is headed by the measure that ordered the list (bm25, cos, rrf, p(yes)); "ranks" is each channel's.
COLUMNS = (("#", 2), ("score", 7), ("ranks", 11), ("kind", 10), ("text", None))
RERANKED_COLUMNS = (("#", 2), ("coarse", 6), ("score", 7), ("ranks", 11), ("kind", 10), ("text", None))
#: A search over several scopes shows each hit's scope before its text.
SCOPE_COLUMN = ("scope", 12)
#: The filter fields: (input id, the SearchForm field it fills, placeholder). Filters other than the scopes are kept
#: for the next search (like mode, limit and rerank); the scopes start blank: the scope the search was opened on.
FILTERS = (
    ("scopes", "scopes", "this scope · * all · a, b"),
    ("kinds", "kinds", "fact, todo"),
    ("where", "where", "key=value …"),
    ("created-from", "created_from", "YYYY-MM-DD"),
    ("created-before", "created_before", "YYYY-MM-DD"),
)
KEPT_FILTERS = ("kinds", "where", "created_from", "created_before")


class SearchScreen(StoreScreen):
    BINDINGS = [
        Binding("S", "focus_query", "Query"),  # S searches on every screen; / filters the hits, as on every list
        Binding("ctrl+r", "search", "Search"),
        Binding("enter", "open", "Open", show=False),
        Binding("t", "trace", "Trace"),
        # (said on the status line: 80 columns); before the list's ctrl+f (a page down): the filters are this screen's
        Binding("ctrl+f", "filters", "Filters, scopes", show=False, priority=True),
        Binding("y,c", "copy_citation", "Copy citation", show=False),
    ]

    def __init__(self, scope: str, query: str = "", note: str | None = None) -> None:
        super().__init__()
        self.scope, self.initial_query, self.note = scope, query, note
        self.page: SearchPage | None = None
        self.evidence: Evidence | None = None

    def compose(self) -> ComposeResult:
        policies = self.session.policies()
        last = self.pcmem_app.search_defaults  # the last search's mode, limit and policy
        policy = last.get("policy") if last.get("policy") in policies else policies[0]
        yield Header()
        with Horizontal(id="search-form"):
            # no select-all on focus: letters typed on the hits continue the query (S selects it all, to retype it)
            yield HistoryInput(self.pcmem_app.search_history, self.initial_query, placeholder=f"search {self.scope}…",
                               id="query", select_on_focus=False)
            yield Select([(mode, mode) for mode in SEARCH_MODES], value=last.get("mode", "auto"), allow_blank=False,
                         id="mode")
            yield Input(last.get("limit", "10"), type="integer", max_length=2, id="limit", tooltip="results (1..50)")
            yield Select([(p, p) for p in policies], value=policy, allow_blank=False, id="rerank",
                         disabled=len(policies) == 1, tooltip="rerank policy (pcmem tui --model to enable)")
        with Horizontal(id="search-filters"):
            for input_id, field, placeholder in FILTERS:
                yield Input(last.get(field, "") if field in KEPT_FILTERS else "", placeholder=placeholder, id=input_id)
        yield ListTable(COLUMNS, _cells, _words, zebra_stripes=True, id="hits")
        yield Static(id="hit-detail")
        yield WorkProgress()
        yield StatusLine()
        yield StoreBar()
        yield key_footer()

    def on_mount(self) -> None:
        self.sub_title = f"search {self.scope}"
        self.query_one(WorkProgress).finish()
        self.query_one("#hit-detail").display = False
        self.query_one("#hit-detail").border_title = "hit"
        for input_id, field, _ in FILTERS:
            self.query_one(f"#{input_id}").border_title = field.replace("created_", "")
        filters = self.query_one("#search-filters")
        filters.display = any(self.pcmem_app.search_defaults.get(field) for field in KEPT_FILTERS)  # never a hidden filter
        self.query_one("#query", Input).focus()
        self.pcmem_app.warm_scope(self.scope, at_once=True)  # while the query is typed
        self.status.info(self.note or "type a query and press enter · ctrl+f: filters and other scopes · ↑↓: history")

    def form(self) -> SearchForm:
        return SearchForm(
            scope=self.scope,
            query=self.query_one("#query", Input).value,
            mode=str(self.query_one("#mode", Select).value),
            limit=self.query_one("#limit", Input).value,
            policy=str(self.query_one("#rerank", Select).value),
            **{field: self.query_one(f"#{input_id}", Input).value for input_id, field, _ in FILTERS},
        )

    @on(Input.Submitted)
    def _submitted(self) -> None:
        self.action_search()

    @on(Select.Changed, "#mode, #rerank")
    def _choice_changed(self) -> None:
        """Another mode or rerank policy answers the question already asked: it runs again at once."""
        if self.searched is not None and self.query_one("#query", Input).value.strip():
            self.action_search()

    #: The query last searched (``None`` before the first search).
    searched: str | None = None

    def on_key(self, event: events.Key) -> None:
        """Typing on the hits list goes to the query: the list's own keys (j/k, g/G, /, :, space…) and the screen's
        (t, y, S…) keep their meaning, and any other printable key starts editing the query with it, so a word
        typed after the hits came ("decision") never runs the commands its letters name."""
        table = self.query_one(ListTable)
        if self.focused is not table or not event.is_printable or event.character is None or event.key in BOUND:
            return
        event.stop()
        event.prevent_default()
        query = self.query_one("#query", Input)
        query.value += event.character
        query.cursor_position = len(query.value)
        query.focus()

    def action_search(self) -> None:
        """A new search replaces the last one's results at once: if it fails, no earlier hits (or their trace)
        stay on screen as if they answered this query."""
        form = self.form()
        self.pcmem_app.search_defaults.update(mode=form.mode, limit=str(form.limit), policy=form.policy,
                                        **{field: getattr(form, field) for field in KEPT_FILTERS})
        history = self.pcmem_app.search_history
        history.add(form.query)
        self.query_one(HistoryInput).rearm()
        if (problem := history.unsaid_problem()) is not None:
            self.notify(problem, title="pcmem", severity="warning", markup=False)
        self._show_page(None)
        where = form.scopes.strip() or repr(form.scope)
        self.status.info(f"searching {where} for {form.query!r}… (esc cancels)")
        self.searched = form.query
        self.run_search(form)

    @work(thread=True, exclusive=True)
    def run_search(self, form: SearchForm) -> None:
        cancelled = self.cancel_check()
        self.deliver(lambda: self.session.search(form, self.report_progress, cancelled), SearchDone)

    def on_search_done(self, message: SearchDone) -> None:
        page = message.value
        self._hide_busy()
        self._show_page(page)
        self.status.info(_summary(page))
        query = self.query_one("#query", Input)
        # the hits take the focus only from a query that is as it was searched: one the user goes on typing into
        # (or another field they moved to) keeps it, so the next keys are not taken as the list's commands
        if page.hits and self.focused is query and query.value == self.searched:
            self.query_one(ListTable).focus()

    def _show_page(self, page: SearchPage | None) -> None:
        self.page = page
        if page is None:
            self.query_one(ListTable).set_rows([])
            self._show_hit(-1)
        else:
            self._fill(page)
        self.refresh_bindings()

    def _fill(self, page: SearchPage) -> None:
        table = self.query_one(ListTable)
        evidence = self.evidence = Evidence(page)
        reranked = page.rerank is not None
        several = len(page.memories) > 1  # a search over several scopes: each hit's scope before its text
        columns = tuple((evidence.ordered_by, width) if label == "score" else (label, width)
                        for label, width in (RERANKED_COLUMNS if reranked else COLUMNS)[:-1])
        table.set_columns(columns + ((SCOPE_COLUMN,) if several else ()) + COLUMNS[-1:])
        table.set_rows([(str(rank), Ranked(rank, hit, (evidence.coarse_rank(hit) or "?") if reranked else None,
                                           scope_of(page, hit.citation) if several else None, evidence.score(hit)))
                        for rank, hit in enumerate(page.hits, 1)])
        table.move_cursor(row=0)
        self._show_hit(0)

    def on_list_table_row_highlighted(self, event: ListTable.RowHighlighted) -> None:
        self._show_hit(int(event.key) - 1 if event.key else -1)

    def on_resize(self) -> None:
        self.call_after_refresh(self._reflow)  # after layout: the detail box's new width is known then

    def _reflow(self) -> None:
        key = self.query_one(ListTable).cursor_key
        self._show_hit(int(key) - 1 if key else -1)

    def _show_hit(self, index: int) -> None:
        detail = self.query_one("#hit-detail", Static)
        hits = self.page.hits if self.page else ()
        detail.display = 0 <= index < len(hits)
        if not detail.display:
            return
        detail.update(hit_detail(hits[index], self.app.size.width - 6,  # border and padding: 4, scrollbar: 2
                                 self.evidence.explain(hits[index]) if self.evidence else ""))

    def on_list_table_row_selected(self, event: ListTable.RowSelected) -> None:
        event.stop()
        self.action_open()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "trace":
            return self.page is not None and self.page.rerank is not None
        return True

    def action_focus_query(self) -> None:
        query = self.query_one("#query", Input)
        query.focus()
        query.select_all()

    def action_filters(self) -> None:
        """Show the filter fields and go to the first; from inside them, back to the query (hiding them when none
        is set: a hidden filter would narrow searches unseen)."""
        filters = self.query_one("#search-filters")
        inside = self.focused is not None and filters in self.focused.ancestors
        if not filters.display or not inside:
            filters.display = True
            self.query_one("#scopes", Input).focus()
            return
        if not any(getattr(self.form(), field) for _, field, _ in FILTERS):
            filters.display = False
        else:
            self.status.info("filters kept (and shown) while set: clear them to hide them · ctrl+f: back to them")
        self.query_one("#query", Input).focus()

    def action_open(self) -> None:
        key = self.query_one(ListTable).cursor_key
        if self.page is None or key is None:
            return
        citation = self.page.hits[int(key) - 1].citation
        self.app.push_screen(EntryScreen(scope_of(self.page, citation), citation.entry_id, citation.revision))

    def action_copy_citation(self) -> None:
        key = self.query_one(ListTable).cursor_key
        if self.page is not None and key is not None:
            self.copy_citation(self.page.hits[int(key) - 1].citation)

    def action_trace(self) -> None:
        if self.page is not None and self.page.rerank is not None:
            self.app.push_screen(TraceScreen(self.page))


def _bound_keys(*binding_lists: list[BindingType]) -> frozenset[str]:
    return frozenset(binding.key for bindings in binding_lists for binding in Binding.make_bindings(bindings))


#: The keys that keep their meaning on the hits list (the list's, this screen's, every store screen's, the app's).
BOUND = _bound_keys(ListTable.BINDINGS, SearchScreen.BINDINGS, StoreScreen.BINDINGS,
                    [Binding("question_mark", "help"), Binding("q", "back"), Binding("ctrl+c", "cancel")])


class Ranked(NamedTuple):
    """A hit with its rank, and its rank in the coarse pool when the page was reranked."""

    rank: int
    hit: MemoryHit
    coarse: int | str | None
    #: The hit's scope when the search read several (its own column), else ``None``.
    scope: str | None = None
    #: The measure that ordered the list, for this hit (see :class:`~pcmem_tui.evidence.Evidence`).
    score: str = ""


def _cells(row: Ranked) -> tuple[Cell, ...]:
    hit = row.hit
    cells: tuple[Cell, ...] = (row.rank, Text(row.score, justify="right"), Evidence.ranks(hit), plain(hit.kind))
    if row.coarse is not None:
        cells = (cells[0], row.coarse, *cells[1:])
    if row.scope is not None:
        cells = (*cells, plain(row.scope))
    return (*cells, one_line(hit.text))


def _words(row: Ranked) -> str:
    return f"{row.hit.text} {row.hit.kind} {row.hit.citation.entry_id} {'+'.join(row.hit.matched_by)} {row.scope or ''}"


def _summary(page: SearchPage) -> str:
    if not page.memories:
        return "no memory in the scopes searched yet: nothing to search"
    summary = f"{count(len(page.hits), 'hit')} · mode {page.mode} · {searched(page)}"
    if page.rerank is not None:
        trace = page.rerank
        if trace.used_fallback:
            summary += " · rerank fell back to coarse order: the model kept nothing (t: trace)"
        else:
            summary += f" · reranked: kept {len(trace.selected_ranks)} of {len(trace.candidates)} (t: trace)"
    return summary
