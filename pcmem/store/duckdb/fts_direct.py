"""A scope's full-text candidates scored straight from the index tables in plain Python, for a search that is the
only one its process makes (a ``pcmem search`` call; see :func:`pcmem.store.port.searching_once`).

Why: the in-process view (:mod:`~pcmem.store.duckdb.fts_cache`) reads every posting of the scope and scores with numpy,
an investment that a second search repays. A process that searches once and exits never sees that second search, and
importing numpy alone cost a cold CLI call about as much CPU as the whole DuckDB floor it is measured against (``pcmem
bench startup``). Here one statement reads only the postings of the query's terms in the scope's active head documents,
and Python scores them.

The scores are bit-identical to the view's (:func:`fts_cache.score`, hence to the extension's ``match_bm25``): the
same IEEE operations in the same order on doubles — numpy's int64 → float64 steps are Python's int/float steps for
these small integers — and a document's parts summed in ascending order, one at a time; the order and the tie-break
(score, then entry and version ids bytewise) are the view's. ``tests/store/test_fts_direct.py`` compares both on one store.
"""

from __future__ import annotations

import math

import duckdb

from pcmem.store.duckdb.fts_cache import _BM25_B, _BM25_K1, IndexStats
from pcmem.store.duckdb.fts_index import SCHEMA
from pcmem.types.memory import MemoryRef
from pcmem.types.search import Candidate


def search(db: duckdb.DuckDBPyConnection, memory: MemoryRef, stats: IndexStats, limit: int) -> list[Candidate]:
    """The top ``limit`` active head versions of the scope by BM25 under ``stats`` (read in the same snapshot as
    ``memory``), each with the number of distinct query terms it contains: what :meth:`FtsCache.search` returns."""
    idf = {termid: math.log10(((stats.num_docs - df) + 0.5) / (df + 0.5) + 1) for termid, df in stats.query}
    termids = "(" + ", ".join(str(int(termid)) for termid in idf) + ")"  # never empty: see IndexStats.of
    rows = db.execute(
        f"""SELECT h.entry_id, h.entry_version_id, d.len, t.termid, count(*)::BIGINT AS tf
            FROM {SCHEMA}.terms t JOIN {SCHEMA}.docs d ON d.docid = t.docid
                 JOIN head_entries h ON h.entry_version_id = d.name
            WHERE h.artifact_id = $artifact AND h.state = 'active' AND t.termid IN {termids}
            GROUP BY ALL""",
        {"artifact": memory.artifact_id},
    ).fetchall()
    parts: dict[tuple[str, str], list[float]] = {}
    for entry_id, version_id, length, termid, tf in rows:
        norm = _BM25_K1 * ((1 - _BM25_B) + _BM25_B * (length / stats.avgdl))
        parts.setdefault((entry_id, version_id), []).append(idf[termid] * (((tf * 22) / 10) / (tf + norm)))
    scored = [(_ascending_sum(values), ids, len(values)) for ids, values in parts.items()]
    scored.sort(key=lambda c: (-c[0], c[1][0], c[1][1]))  # ids bytewise (see Candidate.key)
    artifact = memory.artifact_id
    return [Candidate(artifact, entry_id, version_id, value, count)
            for value, (entry_id, version_id), count in scored[:limit]]


def _ascending_sum(values: list[float]) -> float:
    """The parts' sum in ascending order, one at a time (the view's and ``list_sum(list_sort(...))``'s order)."""
    values.sort()
    total = values[0]
    for value in values[1:]:
        total += value
    return total
