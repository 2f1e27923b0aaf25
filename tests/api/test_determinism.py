"""The same search on the same store gives the same ranked lists in every process (issue 20).

Ties are the hard part: duplicate texts have equal BM25 scores and equal vectors, so only the identity tie-break
(bytewise artifact, entry, version — SPEC §2) may order them. Two things used to break it: BM25 summed per-term
contributions in DuckDB's parallel aggregation order (equal scores differing in the last bit), and the vector
channel's BLAS product gave identical rows different cosines depending on their row position, which differs
between a fresh process and one that kept its matrix current through swap-removes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pcmem
from pcmem import NewEntry, RememberRequest, RetireRequest
from pcmem.testing import HashEmbedder as PrecomputedEmbedder
from pcmem.types.search import SearchMemoryRequest

ROOT = Path(__file__).resolve().parents[2]
TEXTS = ["Priya deploys the desktop app on Thursday.", "Marco drinks oolong tea.", "The beagle is named Biscuit.",
         "Deploys are frozen in March.", "Tea and deploys on Thursday."]
QUERIES = ["deploys Thursday", "tea", "beagle Biscuit", "March deploys tea", "Thursday"]


def _searches(runtime: pcmem.SyncRuntime) -> dict[str, list[list[str]]]:
    """Per query and mode: the fused hits, then each channel's raw candidates (entry ids, in order)."""
    found: dict[str, list[list[str]]] = {}
    memory = runtime.memory.for_scope("s")
    terms_of = runtime.backend.analyzer.query_terms
    embedder = PrecomputedEmbedder()
    for query in QUERIES:
        for mode in ("fts", "vector", "hybrid"):
            page = memory.search(SearchMemoryRequest(query=query, mode=mode, limit=40))
            candidates = runtime.backend.candidates("s", fts_terms=terms_of(query),
                                                    query_vector=embedder.embed_query(query), limit=40)
            found[f"{mode}:{query}"] = [[h.citation.entry_id for h in page.hits],
                                        [c.entry_id for c in candidates.fts], [c.entry_id for c in candidates.vector]]
    return found


_CHILD = """
import json, sys
import pcmem
from pcmem.testing import HashEmbedder as PrecomputedEmbedder
sys.path.insert(0, sys.argv[2])
from test_determinism import _searches
with pcmem.open(sys.argv[1], embedder=PrecomputedEmbedder()) as runtime:
    print(json.dumps(_searches(runtime)))
"""


def test_equal_scores_rank_the_same_in_every_process(tmp_path):
    path = tmp_path / "ties.duckdb"
    with pcmem.open(path, embedder=PrecomputedEmbedder()) as runtime:
        memory = runtime.memory.for_scope("s")
        # Every text six times (equal BM25 and equal vectors), ids deliberately not in insertion order.
        entries = [NewEntry(entry_id=f"e{(7 * i) % 60:02d}", text=TEXTS[i % len(TEXTS)]) for i in range(60)]
        memory.remember(RememberRequest(entries=tuple(entries[:30])))
        _searches(runtime)  # this process now holds the scope's vector matrix ...
        memory.remember(RememberRequest(entries=tuple(entries[30:])))
        for entry_id in ("e00", "e07", "e21"):  # ... and keeps it current by swap-removes: rows move
            memory.retire(RetireRequest(entry_id=entry_id, expected_revision=memory.head().revision))
        here = _searches(runtime)
    child = subprocess.run([sys.executable, "-c", _CHILD, str(path), str(Path(__file__).parent)],
                           capture_output=True, text=True, check=True, cwd=ROOT)
    there = json.loads(child.stdout)
    assert here == there
    for lists in here.values():  # ties really are ordered by identity: within one text, ids ascend
        for ranked in lists[1:]:
            by_text: dict[str, list[str]] = {}
            for entry_id in ranked:
                by_text.setdefault(TEXTS[[e.entry_id for e in entries].index(entry_id) % len(TEXTS)], []).append(entry_id)
            assert all(ids == sorted(ids) for ids in by_text.values())
