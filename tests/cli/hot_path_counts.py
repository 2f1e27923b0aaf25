"""Counts of the work a call does on its way to the store, taken by wrapping the real functions (the calls still run):
for tests that pin a hot path to doing each thing once.

- ``path resolutions``: a store target resolved to its file (the DuckDB engine's one place that does it);
- ``owner lookups``: looks for a store's owner (each tries every place an owner may listen);
- ``listeners``: owner sockets this process opened to serve the store to others;
- ``frames``: requests this process sent to an owner (socket round trips);
- ``read transactions`` / ``write transactions``: DuckDB transactions this process began (joined ones not counted);
- ``snapshot reads``: statements a search read outside a transaction, from the memo's snapshot (generation_memo.py).
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pcmem.owner import dial, protocol, transport
from pcmem.store.duckdb import files, generation_memo, transactions


def _counted(counts: Counter[str], key: str, original: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        counts[key] += 1
        return original(*args, **kwargs)

    return call


def counting(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """A counter of the work above, from now until the test ends (see the module docstring)."""
    counts: Counter[str] = Counter()
    monkeypatch.setattr(files, "store_path", _counted(counts, "path resolutions", files.store_path))
    monkeypatch.setattr(dial, "dial", _counted(counts, "owner lookups", dial.dial))
    monkeypatch.setattr(transport.UnixSocketTransport, "listen",
                        _counted(counts, "listeners", transport.UnixSocketTransport.listen))
    monkeypatch.setattr(protocol, "send_frame", _counted(counts, "frames", protocol.send_frame))
    monkeypatch.setattr(generation_memo.LazySnapshot, "read",
                        _counted(counts, "snapshot reads", generation_memo.LazySnapshot.read))
    original = transactions.Transactions._open

    @contextlib.contextmanager
    def opened(self: transactions.Transactions, *, write: bool, first: str | None) -> Iterator[Any]:
        if getattr(self._local, "cursor", None) is None:
            counts["write transactions" if write else "read transactions"] += 1
        with original(self, write=write, first=first) as cursor:
            yield cursor

    monkeypatch.setattr(transactions.Transactions, "_open", opened)
    return counts
