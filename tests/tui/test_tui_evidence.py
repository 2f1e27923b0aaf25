"""Why a hit is where it is (issue #45, item 7): ids that share a prefix stay apart, the score column shows the measure
that ordered the list (BM25, cosine, the reranker's), and each channel's rank is shown.

Real stores, the HashEmbedder (pcmem.testing: real vectors of a deterministic model), Textual's pilot.
"""

from __future__ import annotations

from tui_pilot import (
    SIZE,
    FrozenClock,
    open_scope,
    rows,
    search,
    settle,
    text_of,
)

import pcmem
from pcmem.testing import HashEmbedder
from pcmem_tui.app import make_app
from pcmem_tui.table import ListTable

TEXTS = ("Marco drinks oolong tea.", "Marco books the Porto venue.", "Priya drinks coffee with Marco.",
         "The tea shop near the Porto venue closes early.")


def seeded(path) -> pcmem.SyncRuntime:  # noqa: ANN001
    runtime = pcmem.open(path, embedder=HashEmbedder(), clock=FrozenClock())
    runtime.memory.for_scope("notes").remember(pcmem.RememberRequest(entries=tuple(
        pcmem.NewEntry(entry_id=f"proj-lumen-notes-{n:03}", text=text) for n, text in enumerate(TEXTS, 1))))
    return runtime


async def test_keyed_ids_that_share_a_prefix_keep_their_distinguishing_end_in_the_list(tmp_path):
    """At 120 columns every one of these showed as ``proj-lumen-…``."""
    with seeded(tmp_path / "m.duckdb") as runtime:
        app = make_app(runtime)
        async with app.run_test(size=(120, 36)) as pilot:
            screen = await open_scope(pilot, "notes")
            table = screen.query_one(ListTable)
            drawn = {table.render_line(row + 1).text.split()[-1] for row in range(table.row_count)}
            assert len(drawn) == len(TEXTS) and all(shown.endswith(f"{n:03}") for n, shown in
                                                    zip(range(1, 5), sorted(drawn), strict=True))


async def test_the_score_column_shows_the_measure_that_ordered_the_list(tmp_path):
    with seeded(tmp_path / "m.duckdb") as runtime:
        app = make_app(runtime)
        async with app.run_test(size=SIZE) as pilot:
            await open_scope(pilot, "notes")
            await pilot.press("S")
            await search(pilot, "Marco tea", mode="vector", limit="3")
            screen = app.screen
            table = screen.query_one(ListTable)
            hits = screen.page.hits
            assert table.columns[1][0] == "cos"  # not the fused 1/(60 + rank) of one channel
            assert [row[1] for row in rows(table)] == [f"{hit.channels['vector'][1]:.3f}" for hit in hits]
            assert [row[2] for row in rows(table)] == [f"vec#{rank}" for rank in range(1, len(hits) + 1)]

            await search(pilot, "Marco tea", mode="hybrid", limit="3")
            hits = screen.page.hits
            assert table.columns[1][0] == "rrf" and all("fts#" in row[2] and "vec#" in row[2]
                                                        for row, hit in zip(rows(table), hits, strict=True)
                                                        if len(hit.matched_by) == 2)
            fts_rank, bm25 = hits[0].channels["fts"]
            assert f"fts rank {fts_rank} (bm25 {bm25:.3f})" in text_of(app, "#hit-detail")

            await search(pilot, "Marco tea", mode="hybrid", limit="3", policy="embedding")
            page = screen.page
            cosines = dict(zip((hit.citation for hit in page.rerank.candidates), page.rerank.cosines, strict=True))
            shown = [float(row[2]) for row in rows(table)]  # after the coarse rank: the cosine that ordered it
            assert table.columns[2][0] == "cos" and shown == sorted(shown, reverse=True)
            assert shown == [round(cosines[hit.citation], 3) for hit in page.hits]
            await settle(pilot)
