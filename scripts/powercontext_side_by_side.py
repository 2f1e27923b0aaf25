"""pcmem and PowerContext 1.4.1 side by side on LoCoMo: search latency (p50 ratio per mode) and ranking agreement.

Run it with any Python 3.11+ from the repository:

    OPENBLAS_NUM_THREADS=1 python scripts/powercontext_side_by_side.py --data ../shared/data/locomo/locomo10.json

The first run makes its own virtualenv (``--venv``, default ``~/.cache/pcmem/powercontext-1.4.1``) and installs
``powercontext[builtin]==1.4.1`` from PyPI and this checkout of pcmem there (so the pcmem measured is the one
beside this script), then runs itself again inside it. Both libraries run in that one process, on the same data:

- the same LoCoMo turns, one scope per conversation, written with each library's own write call (PowerContext:
  explicit Atomic Memories of kind ``dialog-turn`` in its builtin SQLite runtime; pcmem: one remember per scope);
- the same all-MiniLM-L6-v2 int8 ONNX file, computed by the same code (pcmem's embedder; PowerContext gets it
  through its ``EmbeddingModel`` port), with no query cache on either side: every timed search embeds its query;
- interleaved rounds: in each round every question is searched by one library, then by the other, in the order
  that alternates between rounds; the figures are p50 / p95 per library and mode, and pcmem ÷ PowerContext p50.

Rankings "agree" when both return the same turns in the same order for a question (top ``--limit``); the share of
questions that agree and the mean overlap of the two top-k sets are printed per mode. They are not expected to be
identical: PowerContext indexes and embeds ``kind + newline + text`` (its Atomic Memory input) with its own
analyzer (jieba), pcmem the text alone with its analyzer v2. What must hold is that neither side's ranking of a
question changes between rounds (printed as "changed between rounds": 0 expected on both sides).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
POWERCONTEXT = "powercontext[builtin]==1.4.1"
#: PowerContext's builtin store loads the sqlite-vec extension; a Python built without loadable SQLite extensions
#: (pyenv's default) gets them from this wheel's sqlite3 module instead (see _sqlite_with_extensions).
SQLITE_WITH_EXTENSIONS = "pysqlite3-binary"
DEFAULT_VENV = Path.home() / ".cache" / "pcmem" / "powercontext-1.4.1"
MODES = ("fts", "vector", "hybrid")
PC_MODE = {"fts": "text", "vector": "vector", "hybrid": "hybrid"}  # PowerContext's names for the same modes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, type=Path, help="locomo10.json (CC BY-NC 4.0)")
    parser.add_argument("--venv", type=Path, default=DEFAULT_VENV, help="virtualenv for PowerContext (made once)")
    parser.add_argument("--conversations", type=int, default=10, help="the first N conversations (default all 10)")
    parser.add_argument("--questions", type=int, default=0, help="at most this many questions (0: all of cats 1-4)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if not args.data.is_file():
        sys.exit(f"error: no LoCoMo file at {args.data}")
    if not args.inside:
        python = _prepared_venv(args.venv)
        os.execv(str(python), [str(python), str(Path(__file__).resolve()), *sys.argv[1:], "--inside"])
    asyncio.run(_compare(args))


def _prepared_venv(venv: Path) -> Path:
    """The venv's python, after making the venv and installing PowerContext and this pcmem checkout (once)."""
    python = venv / "bin" / "python"
    marker = venv / ".pcmem-side-by-side"
    if marker.is_file() and marker.read_text() == f"{POWERCONTEXT}\n{REPO}\n":
        return python
    print(f"preparing {venv}: {POWERCONTEXT} and pcmem from {REPO} (a few minutes, once)", file=sys.stderr)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", POWERCONTEXT, SQLITE_WITH_EXTENSIONS, "-e", str(REPO)],
                   check=True)
    marker.write_text(f"{POWERCONTEXT}\n{REPO}\n")
    return python


# --- inside the venv: both libraries in one process -----------------------------------------------------------


def _sqlite_with_extensions() -> None:
    """Make ``import sqlite3`` give a module that can load sqlite-vec, before PowerContext (aiosqlite) imports it."""
    import sqlite3

    if hasattr(sqlite3.Connection, "enable_load_extension"):
        return
    import pysqlite3  # type: ignore[import-not-found]

    sys.modules["sqlite3"] = pysqlite3


def _load_locomo(path: Path, conversations: int) -> tuple[dict[str, list[tuple[str, str]]], list[tuple[str, str]]]:
    """({scope: [(dia_id, entry text)]}, [(scope, question)]) for the first ``conversations``, categories 1-4; the
    entry text is pcmem's LoCoMo bench's: "[session date] speaker: text"."""
    raw = json.loads(path.read_text(encoding="utf-8"))[:conversations]
    turns: dict[str, list[tuple[str, str]]] = {}
    questions: list[tuple[str, str]] = []
    for item in raw:
        scope, conversation = f"locomo-{item['sample_id']}", item["conversation"]
        rows = turns[scope] = []
        session = 1
        while f"session_{session}" in conversation:
            when = conversation.get(f"session_{session}_date_time", "")
            for turn in conversation[f"session_{session}"]:
                photo = f" [shares a photo: {turn['blip_caption']}]" if turn.get("blip_caption") else ""
                if turn.get("text") or photo:
                    rows.append((turn["dia_id"], f"[{when}] {turn['speaker']}: {turn.get('text', '')}{photo}"))
            session += 1
        questions += [(scope, qa["question"]) for qa in item["qa"] if qa.get("category") in (1, 2, 3, 4)]
    return turns, questions


class _EveryQueryEmbedded:
    """pcmem's MiniLM embedder with its query memo bypassed: each search embeds its query."""

    def __init__(self, embedder) -> None:
        self._embedder = embedder
        self.profile = embedder.profile
        self.last_query_ms = 0.0  # what the last search spent embedding its query

    def embed_documents(self, texts, progress=None):
        return self._embedder.embed_documents(texts, progress)

    def embed_query(self, text):
        began = time.perf_counter()
        vector = self._embedder.embed_documents([text])[0]
        self.last_query_ms = (time.perf_counter() - began) * 1000
        return vector


class _PowerContextEmbedding:
    """The same embedder behind PowerContext's ``EmbeddingModel`` port (it has no query cache of its own)."""

    def __init__(self, embedder) -> None:
        from powercontext.builtin.artifacts.memory.models import EmbeddingProfile

        self._embedder = embedder
        self.profile = EmbeddingProfile(profile_id="minilm-l6-int8", model=embedder.profile.model_id, dimension=384)

    async def embed(self, texts):
        from powercontext.builtin.inference.models import EmbeddingResult, InferenceUsage

        vectors = self._embedder.embed_documents(list(texts))
        return EmbeddingResult(vectors=tuple(tuple(float(x) for x in row) for row in vectors),
                               usage=InferenceUsage(requests=1))


async def _compare(args: argparse.Namespace) -> None:
    import logging
    from contextlib import AsyncExitStack

    _sqlite_with_extensions()
    # PowerContext's model-usage statistics (a queue this harness never drains) warn on every call: not our figures.
    logging.getLogger("powercontext.builtin.runtime._model_usage").setLevel(logging.ERROR)

    from powercontext.builtin.artifacts.atomic_memory.models import AtomicMemoryContent
    from powercontext.builtin.runtime.composition import open_builtin_runtime
    from powercontext.builtin.runtime.config import BuiltinConfig
    from powercontext.builtin.scope.models import ScopeDraft

    import pcmem
    from pcmem.embedding.presets import resolve

    turns, questions = _load_locomo(args.data, args.conversations)
    if args.questions:
        questions = questions[:: max(1, len(questions) // args.questions)][: args.questions]
    embedder = resolve("minilm-l6-int8")
    embedder.embed_query("warm up")
    work = Path(tempfile.mkdtemp(prefix="pcmem-vs-powercontext-"))
    figures: dict = {"questions": len(questions), "entries": sum(map(len, turns.values())), "rounds": args.rounds,
                     "load_before": os.getloadavg()[0]}
    async with AsyncExitStack() as stack:
        config = BuiltinConfig.model_validate(
            {"database": {"kind": "sqlite", "url": f"sqlite+aiosqlite:///{work / 'powercontext.sqlite'}"}})
        pc_runtime = await stack.enter_async_context(open_builtin_runtime(
            config, scheduler_path=work / "scheduler.db", embedding_model=_PowerContextEmbedding(embedder)))
        timed_embedder = _EveryQueryEmbedded(embedder)
        ours = stack.enter_context(pcmem.open(work / "pcmem.duckdb", embedder=timed_embedder))
        pc_ids: dict[str, dict[str, str]] = {}  # scope → PowerContext artifact id → dia_id
        pc_scope: dict[str, str] = {}  # our scope → the id PowerContext gave the scope it made for it
        for scope in turns:
            made = await pc_runtime.scopes.create(ScopeDraft(title=scope, summary=f"LoCoMo {scope}",
                                                             idempotency_key=scope))
            pc_scope[scope] = made.scope_id
        started = time.perf_counter()
        for scope, rows in turns.items():
            ours.memory.for_scope(scope).remember(pcmem.RememberRequest(entries=tuple(
                pcmem.NewEntry(entry_id=dia_id, kind="dialog-turn", text=text) for dia_id, text in rows)))
        figures["pcmem_ingest_s"] = time.perf_counter() - started
        started = time.perf_counter()
        for scope, rows in turns.items():
            created = await pc_runtime.atomic_memory.for_scope(pc_scope[scope]).create(
                [AtomicMemoryContent(kind="dialog-turn", text=text) for _, text in rows])
            pc_ids[scope] = {record.artifact.artifact_id: dia_id
                             for record, (dia_id, _) in zip(created.records, rows, strict=True)}
        figures["powercontext_ingest_s"] = time.perf_counter() - started

        def search_pcmem(scope: str, query: str, mode: str) -> list[str]:
            page = ours.memory.for_scope(scope).search(pcmem.SearchMemoryRequest(query=query, mode=mode,
                                                                                 limit=args.limit))
            return [hit.citation.entry_id for hit in page.hits]

        async def search_pc(scope: str, query: str, mode: str) -> list[str]:
            page = await pc_runtime.atomic_memory.for_scope(pc_scope[scope]).search(query, mode=PC_MODE[mode],
                                                                                   limit=args.limit)
            return [pc_ids[scope].get(hit.hit.artifact_ref.artifact_id, "?") for hit in page.hits]

        for mode in MODES:  # untimed: each side loads what its first search of a scope loads
            for scope in turns:
                search_pcmem(scope, "warm up", mode)
                await search_pc(scope, "warm up", mode)
        times: dict[str, dict[str, list[float]]] = {side: {m: [] for m in MODES} for side in ("pcmem", "pc")}
        beyond_embedding: dict[str, list[float]] = {m: [] for m in MODES}  # a pcmem search less its own embedding
        rankings: dict[str, dict[str, list[list[str]]]] = {side: {m: [] for m in MODES} for side in ("pcmem", "pc")}
        unstable = {side: {m: 0 for m in MODES} for side in ("pcmem", "pc")}  # rankings that changed between rounds
        for round_ in range(args.rounds):
            order = ("pcmem", "pc") if round_ % 2 == 0 else ("pc", "pcmem")
            for mode in MODES:
                for side in order:
                    for number, (scope, query) in enumerate(questions):
                        timed_embedder.last_query_ms = 0.0
                        began = time.perf_counter()
                        found = search_pcmem(scope, query, mode) if side == "pcmem" else \
                            await search_pc(scope, query, mode)
                        times[side][mode].append((time.perf_counter() - began) * 1000)
                        if side == "pcmem":
                            beyond_embedding[mode].append(times[side][mode][-1] - timed_embedder.last_query_ms)
                        if round_ == 0:
                            rankings[side][mode].append(found)
                        else:
                            unstable[side][mode] += found != rankings[side][mode][number]
        embed_ms = []
        for _, query in questions[:200]:
            began = time.perf_counter()
            embedder.embed_documents([query])
            embed_ms.append((time.perf_counter() - began) * 1000)
        figures["query_embedding_ms_p50"] = statistics.median(embed_ms)
        for mode in MODES:
            ours_ms, theirs_ms = times["pcmem"][mode], times["pc"][mode]
            same = [a == b for a, b in zip(rankings["pcmem"][mode], rankings["pc"][mode], strict=True)]
            overlap = [len(set(a) & set(b)) / max(len(a), len(b), 1)
                       for a, b in zip(rankings["pcmem"][mode], rankings["pc"][mode], strict=True)]
            figures[mode] = {
                "pcmem_ms_p50": statistics.median(ours_ms), "pcmem_ms_p95": _p95(ours_ms),
                "pcmem_beyond_query_embedding_ms_p50": statistics.median(beyond_embedding[mode]),
                "powercontext_ms_p50": statistics.median(theirs_ms), "powercontext_ms_p95": _p95(theirs_ms),
                "ratio_p50": statistics.median(ours_ms) / statistics.median(theirs_ms),
                "same_ranking": sum(same) / len(same), "overlap_at_k": sum(overlap) / len(overlap),
                "rankings_changed_between_rounds": {"pcmem": unstable["pcmem"][mode], "powercontext": unstable["pc"][mode]},
            }
    figures["load_after"] = os.getloadavg()[0]
    _print(figures)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


def _p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[94] if len(values) > 1 else values[0]


def _print(figures: dict) -> None:
    print(f"{figures['questions']} questions × {figures['rounds']} interleaved rounds, {figures['entries']} entries; "
          f"load {figures['load_before']:.1f} → {figures['load_after']:.1f}")
    print(f"ingest s: pcmem {figures['pcmem_ingest_s']:.1f}, PowerContext {figures['powercontext_ingest_s']:.1f}; "
          f"query embedding p50 {figures['query_embedding_ms_p50']:.2f} ms")
    print("pcmem p50 beyond its own query embedding (ms): "
          + ", ".join(f"{mode} {figures[mode]['pcmem_beyond_query_embedding_ms_p50']:.2f}" for mode in MODES))
    print(f"{'mode':8}{'pcmem p50/p95 ms':>20}{'PowerContext p50/p95':>24}{'ratio p50':>11}{'same':>7}{'overlap':>9}"
          f"{'changed between rounds':>24}")
    for mode in MODES:
        f = figures[mode]
        print(f"{mode:8}{f['pcmem_ms_p50']:>11.2f} /{f['pcmem_ms_p95']:>7.2f}"
              f"{f['powercontext_ms_p50']:>15.2f} /{f['powercontext_ms_p95']:>7.2f}"
              f"{f['ratio_p50']:>11.2f}{f['same_ranking']:>7.2f}{f['overlap_at_k']:>9.2f}"
              f"{f['rankings_changed_between_rounds']['pcmem']:>12}{f['rankings_changed_between_rounds']['powercontext']:>12}")


if __name__ == "__main__":
    main()
