"""``pcmem bench perf``: write cost and search latency as a store grows, against references built from the same
data in the same run — SQLite FTS5 ``bm25()`` for the lexical channel, numpy brute force for vectors.

Vectors are precomputed (a deterministic pseudo-embedder) because the embedding model is not what is measured here;
bulk import with the real model is measured separately against the model alone.

Several storage backends (``duckdb``, ``seekdb``) can be measured on the same data in one run: the result then
holds one row per backend and size, and :func:`compare` reports each backend's latency ratio to the first one and
how far their top-10 hits agree (same texts in the same order), so an engine swap shows both its cost and that
retrieval did not change.
"""

from __future__ import annotations

import atexit
import random
import resource
import shutil
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

import pcmem
from pcmem.analysis import ANALYZERS
from pcmem.errors import InputError
from pcmem.search.fusion import channel_candidate_count
from pcmem.testing import HashEmbedder
from pcmem.types.memory import NewEntry, RememberRequest
from pcmem.types.search import SearchMemoryRequest
from pcmem_bench import slug

_SUBJECTS = ("Priya", "Marco", "the release team", "Tanaka-san", "the designer", "Lea", "Omar", "the support desk",
             "our CI runner", "the finance team", "Ines", "the QA lead")
_VERBS = ("moved", "reviewed", "postponed", "approved", "discussed", "fixed", "shipped", "documented", "measured",
          "rejected", "scheduled", "translated")
_OBJECTS = ("the Windows installer", "the onboarding checklist", "release 2.4", "the sync protocol",
            "the offsite budget", "the crash in the profile loader", "the Japanese documentation",
            "the database migration", "the design tokens", "the telemetry opt-in", "the beta channel",
            "the accessibility audit", "the font rendering bug", "the quarterly roadmap")
_WHEN = ("on Monday", "last week", "before lunch", "after the standup", "in March", "during the offsite",
         "on Friday afternoon", "yesterday", "at the retro", "after the smoke test")
DIMENSION = 384
QUERIES = 30


def sentences(count: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return [f"{rng.choice(_SUBJECTS)} {rng.choice(_VERBS)} {rng.choice(_OBJECTS)} {rng.choice(_WHEN)} "
            f"(note {i}, ticket LUM-{rng.randint(100, 9999)})." for i in range(count)]


def PrecomputedEmbedder() -> HashEmbedder:  # noqa: N802 - reads as the class it stands in for
    """Deterministic unit vectors derived from the text's hash: stands in for the model where it is not measured."""
    return HashEmbedder("bench/precomputed-hash", DIMENSION, by="text")


def _timed(function: Callable[[], object], repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        function()
        times.append((time.perf_counter() - started) * 1000)
    return times


def _p(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else values[0]


BACKENDS = ("duckdb", "seekdb")


def store_target(backend: str, workdir: Path, name: str) -> str | Path:
    """Where a benchmark store of ``backend`` lives: a file in ``workdir``, or a database of embedded seekdb in
    ``workdir/seekdb`` — or in the data directory this process already has open (one per process)."""
    if backend == "duckdb":
        return workdir / f"{name}.duckdb"
    if backend == "seekdb":
        from pcmem.store.seekdb.connector import open_embedded_directory

        return f"seekdb://{open_embedded_directory() or workdir / 'seekdb'}?database={name.replace('-', '_')}"
    raise InputError(f"unknown backend {backend!r}; choose from {', '.join(BACKENDS)}")


def _drop(target: str | Path) -> None:
    if isinstance(target, str):
        from pcmem.store.seekdb.connector import Connector, parse

        Connector(parse(target)).drop_database()


def bench_size(size: int, workdir: Path, scopes: int = 1, backend: str = "duckdb") -> dict:
    texts = sentences(size)
    queries = [t.split(" (note")[0] for t in sentences(QUERIES, seed=99)]
    embedder = PrecomputedEmbedder()
    path = store_target(backend, workdir, f"perf-{size}-{scopes}")
    result: dict = {"backend": backend, "size": size, "scopes": scopes}
    with pcmem.open(path, embedder=embedder) as runtime:
        started = time.perf_counter()
        chunk_size = _chunk(size, scopes)
        for start in range(0, size, chunk_size):
            chunk = texts[start:start + chunk_size]
            scope = f"s{(start // chunk_size) % scopes}"
            runtime.memory.for_scope(scope).remember(RememberRequest(entries=tuple(NewEntry(text=t) for t in chunk)))
        result["load_s"] = round(time.perf_counter() - started, 2)
        memory = runtime.memory.for_scope("s0")
        step = iter(range(QUERIES))  # deterministic texts: backends compared on the same data end up with the same
        writes = _timed(lambda: memory.remember(f"A fresh note written at step {next(step)}."), QUERIES)
        result["remember_ms_p50"], result["remember_ms_p95"] = _p(writes, 50), _p(writes, 95)
        fresh = memory.remember("Zanzibar quokka rendezvous scheduled for the offsite.")
        found = memory.search(SearchMemoryRequest(query="zanzibar quokka", mode="fts")).hits
        result["fresh_after_write"] = bool(found) and found[0].citation.entry_id == fresh.citations[0].entry_id
        result["top10"] = {}
        for mode in ("fts", "vector", "hybrid"):
            cycle = iter(queries * 3)
            times = _timed(lambda: memory.search(SearchMemoryRequest(query=next(cycle), mode=mode)), QUERIES)
            result[f"{mode}_ms_p50"], result[f"{mode}_ms_p95"] = _p(times, 50), _p(times, 95)
            result["top10"][mode] = [[h.text for h in memory.search(SearchMemoryRequest(query=q, mode=mode)).hits]
                                     for q in queries]
        backend_ = runtime.backend
        # The hash vectors rarely pass the 0.3 similarity admission, so pages say little about the vector channel:
        # compare its raw candidates (top 10 by cosine) too.
        result["top10"]["vector_candidates"] = []
        for q in queries:
            pool = backend_.candidates("s0", fts_terms=None, query_vector=embedder.embed_query(q), limit=10)
            result["top10"]["vector_candidates"].append([pool.versions[c.entry_version_id].text for c in pool.vector])
        head = memory.head()
        assert head is not None
        entries = backend_.manifest(head, include_retired=False)
        stored = backend_.stored_vectors(embedder.profile, [e.entry.entry_version_id for e in entries])
        rows = [(e.entry.text, stored[e.entry.entry_version_id]) for e in entries if e.entry.entry_version_id in stored]
    result["file_bytes_per_entry"] = round(path.stat().st_size / size, 1) if isinstance(path, Path) else None
    _drop(path)
    # Every other scope's texts, as loaded above: the several-scopes reference holds the whole store.
    chunk_size = _chunk(size, scopes)
    others = [(text, f"s{(start // chunk_size) % scopes}") for start in range(0, size, chunk_size)
              for text in texts[start:start + chunk_size] if (start // chunk_size) % scopes != 0]
    result.update(_references(rows, queries, embedder, others, workdir))
    result["ratio_fts_vs_fts5"] = result["fts_ms_p50"] / result["fts5_ms_p50"]
    result["ratio_remember_vs_fts5_insert"] = result["remember_ms_p50"] / result["fts5_insert_ms_p50"]
    result["ratio_vector_vs_numpy"] = result["vector_ms_p50"] / result["numpy_ms_p50"]
    result["ratio_hybrid_vs_both"] = result["hybrid_ms_p50"] / (result["fts5_ms_p50"] + result["numpy_ms_p50"])
    return result


def _chunk(size: int, scopes: int) -> int:
    """Entries per write while loading: 2,000, or fewer so that every scope gets its share."""
    return max(1, min(2000, size // scopes))


def parse_spread(spec: str, sizes: Sequence[int]) -> list[tuple[int, int]]:
    """``--spread``: "100" (the largest size over 100 scopes), "100@100000,1000@1000000", or "0" (none)."""
    points = []
    for part in (p.strip() for p in spec.split(",") if p.strip()):
        scopes_text, _, size_text = part.partition("@")
        try:
            scopes = int(scopes_text)
            size = int(size_text) if size_text else max(sizes, default=0)
        except ValueError:
            raise InputError(f"--spread takes SCOPES or SCOPES@SIZE, comma separated; got {part!r}") from None
        if scopes < 0 or size < 0 or (scopes and size < scopes):
            raise InputError(f"--spread {part!r}: need 0 <= scopes <= size")
        if scopes > 1 and size:
            points.append((scopes, size))
    return points


def _references(rows: list, queries: list[str], embedder: HashEmbedder,
                other_scopes: Sequence[tuple[str, str]] = (), workdir: Path | None = None) -> dict:
    """SQLite FTS5 bm25() over the same analysed terms, and numpy X @ q, on the same scope's entries.

    With several scopes the FTS5 reference is what a SQLite user would build: one store-wide table with a scope
    column, each query filtered to the scope (``fts5_ms_p50``); the table of that scope's rows alone is kept as
    ``fts5_scope_only_ms_p50``. ``fts5_insert_ms_p50``: one entry inserted and committed into a file-backed FTS5
    table of the same store (synchronous=FULL, WAL), the durable write pcmem's ``remember`` is compared with.
    """
    analyzer = ANALYZERS["v2"]
    n = channel_candidate_count(10)

    def analysed(text: str) -> str:
        return " ".join(analyzer.analyze(text))

    sqlite = sqlite3.connect(":memory:")
    sqlite.execute("CREATE VIRTUAL TABLE docs USING fts5(body)")
    sqlite.executemany("INSERT INTO docs(body) VALUES (?)", [(analysed(text),) for text, _ in rows])
    wide = sqlite3.connect(":memory:")
    wide.execute("CREATE VIRTUAL TABLE docs USING fts5(body, scope UNINDEXED)")
    wide.executemany("INSERT INTO docs(body, scope) VALUES (?, ?)",
                     [(analysed(text), "s0") for text, _ in rows] + [(analysed(t), s) for t, s in other_scopes])
    cycle = iter(queries * 3)

    def fts5_on(db: sqlite3.Connection, scoped: bool) -> Callable[[], None]:
        where = " AND scope = 's0'" if scoped else ""

        def query() -> None:
            terms = analyzer.query_terms(next(cycle))
            match = " OR ".join(f'"{t}"' for t in terms)
            db.execute(f"SELECT rowid, bm25(docs) FROM docs WHERE docs MATCH ?{where} ORDER BY bm25(docs) LIMIT ?",
                       (match, n)).fetchall()

        return query

    fts5 = fts5_on(wide, scoped=True) if other_scopes else fts5_on(sqlite, scoped=False)
    fts5_scope_only = fts5_on(sqlite, scoped=False)

    matrix = np.asarray([vec for _, vec in rows], dtype=np.float32)
    vectors = iter([embedder.embed_query(q) for q in queries * 3])

    def brute() -> None:
        scores = matrix @ next(vectors)
        top = np.argpartition(-scores, min(n, len(scores) - 1))[:n]
        top[np.argsort(-scores[top])]

    figures = {"fts5_ms_p50": _p(_timed(fts5, QUERIES), 50),
               "fts5_scope_only_ms_p50": _p(_timed(fts5_scope_only, QUERIES), 50),
               "fts5_reference": "store-wide table, scope column filtered" if other_scopes else "the scope's rows",
               "numpy_ms_p50": _p(_timed(brute, QUERIES), 50)}
    figures["fts5_insert_ms_p50"] = _fts5_insert_ms(rows, other_scopes, workdir, analysed)
    return figures


def _fts5_insert_ms(rows: list, other_scopes: Sequence[tuple[str, str]], workdir: Path | None,
                    analysed: Callable[[str], str]) -> float:
    folder = Path(tempfile.mkdtemp(prefix="pcmem-fts5-", dir=workdir))
    try:
        db = sqlite3.connect(folder / "fts5.sqlite", isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        db.execute("CREATE VIRTUAL TABLE docs USING fts5(body, scope UNINDEXED)")
        db.execute("BEGIN")
        db.executemany("INSERT INTO docs(body, scope) VALUES (?, ?)",
                       [(analysed(text), "s0") for text, _ in rows] + [(analysed(t), s) for t, s in other_scopes])
        db.execute("COMMIT")
        step = iter(range(QUERIES))

        def insert() -> None:
            db.execute("BEGIN")
            db.execute("INSERT INTO docs(body, scope) VALUES (?, 's0')",
                       (analysed(f"A fresh note written at step {next(step)}."),))
            db.execute("COMMIT")

        figure = _p(_timed(insert, QUERIES), 50)
        db.close()
        return figure
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def bench_import(count: int, workdir: Path, backend: str = "duckdb", embedder_name: str = "minilm-l6-int8") -> dict:
    """Bulk import with a real embedder vs that embedder alone on the same texts."""
    from pcmem.embedding.presets import resolve

    embedder = resolve(embedder_name)
    texts = sentences(count, seed=3)
    embedder.embed_query("warm up")
    started = time.perf_counter()
    embedder.embed_documents(texts)
    alone = time.perf_counter() - started
    target = store_target(backend, workdir, f"import-{slug(embedder_name)}")
    with pcmem.open(target, embedder=embedder) as runtime:
        started = time.perf_counter()
        runtime.memory.for_scope("import").remember(RememberRequest(entries=tuple(NewEntry(text=t) for t in texts)))
        stored = time.perf_counter() - started
    _drop(target)
    return {"backend": backend, "embedder": embedder_name, "profile": embedder.profile.model_id,
            "import_entries": count, "embedder_alone_per_s": count / alone, "import_per_s": count / stored,
            "ratio_import_vs_embedder": alone / stored}


def run(sizes: Sequence[int], import_count: int = 1000, spread: Sequence[tuple[int, int]] = (),
        backends: Sequence[str] = ("duckdb",), embedders: Sequence[str] = ("minilm-l6-int8",)) -> dict:
    for backend in backends:
        store_target(backend, Path("."), "check")  # an unknown backend fails before anything runs
    workdir = Path(tempfile.mkdtemp(prefix="pcmem-perf-"))
    # Registered before any embedded seekdb opens, so it runs after the engine's own atexit close.
    atexit.register(shutil.rmtree, workdir, True)
    results, imports = [], []
    for backend in backends:
        results += [bench_size(size, workdir, backend=backend) for size in sizes]
        results += [bench_size(size, workdir, scopes=scopes, backend=backend) for scopes, size in spread]
        if import_count:
            imports += [bench_import(import_count, workdir, backend, name) for name in embedders]
    first = next((r for r in results if r["scopes"] == 1), None)
    last = max((r for r in results if r["scopes"] == 1 and r["backend"] == backends[0]), key=lambda r: r["size"],
               default=None)
    summary = {"remember_ratio_largest_vs_smallest": last["remember_ms_p50"] / first["remember_ms_p50"]
               if first and last else None,
               "spread_vs_single_scope": _spread_vs_single(results)}
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    comparison = compare(results)
    for result in results:
        del result["top10"]  # compared above; too bulky for the report
    return {"sizes": results, "imports": imports, "summary": summary,
            "comparison": comparison, "peak_rss_mb": round(peak_mb, 1)}


def compare(results: Sequence[dict]) -> list[dict]:
    """Per size and scope count: each other backend's p50 latencies ÷ the first backend's, and top-10 agreement."""
    rows = []
    baseline = {(r["size"], r["scopes"]): r for r in results if r["backend"] == results[0]["backend"]} if results else {}
    for r in results:
        base = baseline.get((r["size"], r["scopes"]))
        if base is None or base is r:
            continue
        row = {"backend": r["backend"], "vs": base["backend"], "size": r["size"], "scopes": r["scopes"]}
        for key in ("remember", "fts", "vector", "hybrid"):
            row[f"ratio_{key}_p50"] = r[f"{key}_ms_p50"] / base[f"{key}_ms_p50"]
        # Identical pages, and the share of the first backend's top 10 the other also returns (both empty = 1).
        # BM25 scores differ between engines, and the bench's templated sentences tie a lot (ties break on ids,
        # which each store generates itself), so FTS pages are compared as sets as well as in order.
        for mode in ("fts", "vector", "hybrid", "vector_candidates"):
            pairs = list(zip(base["top10"][mode], r["top10"][mode]))
            row[f"same_top10_{mode}"] = sum(a == b for a, b in pairs) / len(pairs) if pairs else None
            row[f"overlap@10_{mode}"] = (sum(len(set(a) & set(b)) / len(a) if a else float(not b) for a, b in pairs)
                                         / len(pairs) if pairs else None)
        rows.append(row)
    return rows


def _spread_vs_single(results: Sequence[dict]) -> list[dict]:
    """Per several-scopes store: its per-scope search p50 ÷ that of the single-scope store closest to one scope's
    size (the issue's "search costs what its scope costs": 1,000,000 in 1,000 scopes vs 1,000 in one)."""
    rows = []
    singles = [r for r in results if r["scopes"] == 1]
    for r in results:
        if r["scopes"] == 1 or not singles:
            continue
        per_scope = r["size"] / r["scopes"]
        base = min((s for s in singles if s["backend"] == r["backend"]), key=lambda s: abs(s["size"] - per_scope),
                   default=None)
        if base is None:
            continue
        rows.append({"backend": r["backend"], "size": r["size"], "scopes": r["scopes"], "vs_size": base["size"],
                     **{mode: r[f"{mode}_ms_p50"] / base[f"{mode}_ms_p50"] for mode in ("fts", "vector", "hybrid")}})
    return rows
