"""What an idempotency key costs a write (#38): ``remember`` with a key (looked up, then recorded, in the write's
transaction: what every write a client sends does) against the same remember without one, on one store, in
alternating rounds so that a load change slows both sides alike; the ratio is of the medians.

Run it as ``python -m pcmem_bench.keyed_writes [--entries N] [--rounds R] [--per-round K] [--minilm]``; prints
JSON. Hash vectors unless ``--minilm`` (the bundled MiniLM embeds each text: the key's share of a real write).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
import uuid
from pathlib import Path

import pcmem
from pcmem.testing import HashEmbedder


def measure(workdir: Path, entries: int = 1000, rounds: int = 10, per_round: int = 50,
            minilm: bool = False) -> dict[str, float]:
    with pcmem.open(workdir / "keyed.duckdb", embedder="auto" if minilm else HashEmbedder()) as runtime:
        scope = runtime.memory.for_scope("bench")
        for start in range(0, entries, 500):
            scope.remember(pcmem.RememberRequest(entries=tuple(pcmem.NewEntry(text=f"seed note {n} about kiwis")
                                                                for n in range(start, min(entries, start + 500)))))
        timings: dict[str, list[float]] = {"plain": [], "keyed": []}
        for number in range(rounds):
            for side in ("plain", "keyed") if number % 2 == 0 else ("keyed", "plain"):
                for index in range(per_round):
                    key = uuid.uuid4().hex if side == "keyed" else None
                    started = time.perf_counter()
                    scope.remember(f"{side} note {number}-{index} about pears", idempotency_key=key)
                    timings[side].append((time.perf_counter() - started) * 1000)
    plain, keyed = statistics.median(timings["plain"]), statistics.median(timings["keyed"])
    return {"plain_p50_ms": round(plain, 3), "keyed_p50_ms": round(keyed, 3), "ratio": round(keyed / plain, 3),
            "samples_per_side": rounds * per_round}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--per-round", type=int, default=50)
    parser.add_argument("--minilm", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="pcmem-keyed-") as tmp:
        print(json.dumps(measure(Path(tmp), args.entries, args.rounds, args.per_round, args.minilm)))


if __name__ == "__main__":
    main()
