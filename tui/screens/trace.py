"""What a rerank did: the coarse pool, the ranks the model chose (in its order) and the ones it dropped."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Header, Static

from pcmem import CandidateDecision, MemoryHit, SearchPage
from pcmem_tui.evidence import Evidence
from pcmem_tui.format import duration, hit_detail, one_line, plain, scope_of
from pcmem_tui.screens.base import StoreScreen
from pcmem_tui.screens.entry import EntryScreen
from pcmem_tui.table import ListTable
from pcmem_tui.widgets import StatusLine, StoreBar, key_footer

#: "model": the model's own measure (a decision's verdict with p(yes), the embedding policy's cosine); "fused": the
#: coarse list's fused score, which ordered the pool the model judged.
COLUMNS = (("pick", 4), ("coarse", 6), ("verdict", 10), ("model", 17), ("fused", 6), ("text", None))
KEPT, DROPPED = "green", "dim red"


class TraceScreen(StoreScreen):
    BINDINGS = [Binding("enter", "open", "Open", show=False),
                Binding("y,c", "copy_citation", "Copy citation", show=False)]

    def __init__(self, page: SearchPage) -> None:
        super().__init__()
        assert page.rerank is not None and page.memories, "the trace screen needs a reranked page"
        self.page = page

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(id="trace-summary")
        yield ListTable(COLUMNS, lambda row: row[1], lambda row: " ".join(str(cell) for cell in row[1]), id="trace")
        yield Static(id="candidate-detail")
        yield StatusLine()
        yield StoreBar()
        yield key_footer()

    def on_mount(self) -> None:
        self.sub_title = f"rerank trace · {', '.join(memory.scope for memory in self.page.memories)}"
        self.query_one("#trace-summary", Static).update(summary(self.page))
        self.query_one("#candidate-detail").border_title = "candidate"
        self._fill()
        self.status.info("picks in the model's order first, then the dropped candidates in coarse order")
        self.query_one(ListTable).focus()

    def _fill(self) -> None:
        self.query_one(ListTable).set_rows([(key, (key, cells)) for key, cells in trace_rows(self.page)])

    def action_copy_citation(self) -> None:
        if key := self.query_one(ListTable).cursor_key:
            self.copy_citation(self._candidate(key).citation)

    def on_list_table_row_highlighted(self, event: ListTable.RowHighlighted) -> None:
        if event.key is not None:
            candidate = self._candidate(event.key)
            self.query_one("#candidate-detail", Static).update(
                hit_detail(candidate, self.app.size.width - 6, Evidence(self.page).explain(candidate)))

    def _candidate(self, key: str) -> MemoryHit:
        return self.page.rerank.candidates[int(key) - 1]  # type: ignore[union-attr]

    def on_list_table_row_selected(self, event: ListTable.RowSelected) -> None:
        event.stop()
        self.action_open()

    def action_open(self) -> None:
        if key := self.query_one(ListTable).cursor_key:
            citation = self._candidate(key).citation
            self.app.push_screen(EntryScreen(scope_of(self.page, citation), citation.entry_id, citation.revision))


def summary(page: SearchPage) -> Text:
    """Policy, what was kept (or that the fallback applied), and what the model cost."""
    trace = page.rerank
    assert trace is not None
    usage = trace.usage
    text = Text.assemble(("policy ", "dim"), (trace.policy_id, "bold"))
    if trace.embedder:  # the embedding policy: which vectors' cosine ordered the pool
        text.append(" · embedder ", style="dim").append(trace.embedder)
    text.append("\n")
    if trace.used_fallback:
        text.append(f"fallback: the model kept nothing, so the first {len(trace.selected_ranks)} coarse hits are "
                    "shown as they were", style="bold yellow")
    else:
        text.append(f"kept {len(trace.selected_ranks)} of {len(trace.candidates)}")
    text.append(f" · dropped {len(trace.dropped_ranks)} · discarded ranks {trace.discarded_rank_count}")
    text.append(f"\nlatency {duration(trace.latency_ms)}")
    if usage.requests:  # a policy without a generation model (embedding) has no requests or tokens to count
        text.append(f" · {usage.requests} requests · {usage.input_tokens} in + {usage.output_tokens} out tokens")
    if trace.decision_calls is not None:
        text.append(f" · {trace.decision_calls} decision calls")
    return text


def trace_rows(page: SearchPage) -> list[tuple[str, tuple[object, ...]]]:
    """Rows keyed by coarse rank: the picks in the model's order, then the dropped candidates in coarse order."""
    trace = page.rerank
    assert trace is not None
    decisions = {decision.rank: decision for decision in trace.decisions}
    cosines = dict(enumerate(trace.cosines, 1))  # the embedding policy: what it sorted by
    kept = "fallback" if trace.used_fallback else "kept"

    def judged(rank: int) -> Text:
        return cosine_cell(cosines[rank]) if rank in cosines else decision_cell(decisions.get(rank))

    picks = [(str(rank), _row(str(order), rank, trace.candidates[rank - 1], kept, judged(rank)))
             for order, rank in enumerate(trace.selected_ranks, 1)]
    drops = [(str(rank), _row("", rank, trace.candidates[rank - 1], "dropped", judged(rank)))
             for rank in trace.dropped_ranks]
    return picks + drops


VERDICTS = {"kept": ("✓ kept", "bold green"), "fallback": ("↩ fallback", "bold yellow"), "dropped": ("✗ dropped", "red")}
OUTCOME_STYLES = {"yes": "green", "no": "red", "abstain": "yellow"}


def decision_cell(decision: CandidateDecision | None) -> Text:
    """The model's own verdict on a candidate: yes/no/abstain with p(yes) when known; "–" if it was not judged."""
    if decision is None:
        return Text("–", style="dim")
    shown = decision.outcome if decision.yes_probability is None else \
        f"{decision.outcome} p(yes)={decision.yes_probability:.2f}"
    return Text(shown, style=OUTCOME_STYLES.get(decision.outcome, ""))


def cosine_cell(cosine: float) -> Text:
    """The embedding policy's measure of a candidate: its cosine to the query (the pool is sorted by it)."""
    return Text(f"cos {cosine:.3f}", style="cyan")


def _row(pick: str, rank: int, hit: MemoryHit, verdict: str, judged: Text) -> tuple[object, ...]:
    style = DROPPED if verdict == "dropped" else KEPT
    label, label_style = VERDICTS[verdict]
    return (plain(pick, "bold"), plain(rank, style), Text(label, style=label_style), judged,
            plain(f"{hit.score:.4f}", style), one_line(hit.text, style))
