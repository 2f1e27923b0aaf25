"""Why a hit is where it is: the measure that ordered the list, and each channel's rank and own score.

A fused score (``0.0325`` under RRF, Σ 1/(60 + rank)) says little alone, and in ``fts`` or ``vector`` mode it is a rank
in disguise: there the channel's own measure ordered the list (BM25, cosine). After a rerank the model's measure
ordered it: the embedding policy's cosine to the query, a decision model's p(yes). Pure functions of a page.
"""

from __future__ import annotations

from pcmem import Citation, MemoryHit, SearchPage

#: How each channel's own measure is named, in the order pcmem lists channels.
MEASURES = {"fts": "bm25", "vector": "cos"}
SHORT = {"fts": "fts", "vector": "vec"}


def _number(value: float) -> str:
    """Four significant figures at most, so a score column stays narrow (BM25 runs into tens, cosines below 1)."""
    return f"{value:.3f}" if abs(value) < 10 else f"{value:.1f}"


class Evidence:
    """What ordered ``page``, and each hit's evidence for it."""

    def __init__(self, page: SearchPage) -> None:
        self.page = page
        trace = page.rerank
        self._coarse: dict[Citation, int] = {hit.citation: rank for rank, hit in enumerate(trace.candidates, 1)} \
            if trace else {}
        self._cosines = dict(enumerate(trace.cosines, 1)) if trace else {}
        self._decisions = {decision.rank: decision for decision in trace.decisions} if trace else {}

    def coarse_rank(self, hit: MemoryHit) -> int | None:
        return self._coarse.get(hit.citation)

    @property
    def ordered_by(self) -> str:
        """The measure the list is in order of, for the column header and the summary."""
        trace = self.page.rerank
        if trace is not None and trace.cosines:
            return "cos"
        if trace is not None and trace.decisions:
            return "p(yes)"
        if trace is not None:
            return "model"
        if self.page.mode in MEASURES:
            return MEASURES[self.page.mode]
        return self.page.fusion

    def score(self, hit: MemoryHit) -> str:
        """The value of :attr:`ordered_by` for ``hit``."""
        rank = self.coarse_rank(hit)
        if rank is not None and rank in self._cosines:
            return _number(self._cosines[rank])
        if rank is not None and rank in self._decisions:
            decision = self._decisions[rank]
            return "–" if decision.yes_probability is None else f"{decision.yes_probability:.2f}"
        if self.page.rerank is not None:
            return "–"
        if self.page.mode in MEASURES and self.page.mode in hit.channels:
            return _number(hit.channels[self.page.mode][1])
        return f"{hit.score:.4f}"

    @staticmethod
    def ranks(hit: MemoryHit) -> str:
        """Each channel's rank of the hit (``fts#2 vec#5``), or the channels alone when pcmem gave no ranks."""
        if not hit.channels:
            return "+".join(hit.matched_by)
        return " ".join(f"{SHORT.get(channel, channel)}#{rank}" for channel, (rank, _) in hit.channels.items())

    def explain(self, hit: MemoryHit) -> str:
        """One line for the hit box: every channel's rank and measure, the fusion, and the rerank's measure."""
        parts = [f"{channel} rank {rank} ({MEASURES.get(channel, 'score')} {_number(score)})"
                 for channel, (rank, score) in hit.channels.items()]
        if len(hit.channels) > 1 or self.page.mode == "hybrid":
            parts.append(f"{self.page.fusion} {hit.score:.4f}")
        rank = self.coarse_rank(hit)
        if rank is not None:
            parts.append(f"coarse rank {rank}")
            if rank in self._cosines:
                parts.append(f"reranked by cosine {_number(self._cosines[rank])}")
            elif rank in self._decisions and self._decisions[rank].yes_probability is not None:
                decision = self._decisions[rank]
                parts.append(f"the model said {decision.outcome}, p(yes) = {decision.yes_probability:.2f}")
        return "why here: " + " · ".join(parts) if parts else ""
