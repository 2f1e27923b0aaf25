"""The best ``limit`` of a channel's scored documents in the contract's order: score descending, ties bytewise on the
ids (see Candidate.key) — with the ordering done by numpy and Python's own sort, not a Python function per document.

Why: a query whose terms every document shares ("kiwis note 7" in a scope of notes about kiwis) ties hundreds of
documents at the cut, and every one of them competes on the tie-break. Building a (score, ids, count) tuple per document
and sorting them with a key function cost more than half of a warm search, all of it holding the GIL, so searches on
four threads ran no faster than on one. Here the scores are ordered in one numpy call; only runs of equal scores are
ordered by their ids, by a sort that compares the id tuples in C.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

#: The (entry_id, entry_version_id) of each of the given positions of a channel's scores, in order.
IdsAt = Callable[["np.ndarray"], list[tuple[str, str]]]


def best_positions(scores: np.ndarray, limit: int, ids_at: IdsAt) -> list[int]:
    """Positions in ``scores`` of the ``limit`` best documents, best first: higher score first, equal scores by
    (entry_id, entry_version_id) ascending — strings compare by code point, the order of their UTF-8 bytes.

    Only the documents above the cut (fewer than ``limit``) are ordered by score; of those tied with the cut, only
    as many as are still wanted are taken, by their ids."""
    import numpy as np  # lazy: a cold CLI call that does not search never imports numpy

    count = len(scores)
    if count <= limit:
        return _in_order(scores, np.arange(count), limit, ids_at)
    cut = np.partition(scores, count - limit)[count - limit]
    above = _in_order(scores, np.flatnonzero(scores > cut), limit, ids_at)
    tied = np.flatnonzero(scores == cut)  # every document tied with the cut competes on the tie-break
    return above + _by_ids(tied.tolist(), ids_at(tied), limit - len(above))


def _in_order(scores: np.ndarray, positions: np.ndarray, limit: int, ids_at: IdsAt) -> list[int]:
    """``positions`` by score descending, runs of equal scores by ids; the first ``limit``."""
    import numpy as np  # lazy: a cold CLI call that does not search never imports numpy

    positions = positions[np.argsort(-scores[positions], kind="stable")]
    values = scores[positions]
    ids = ids_at(positions)
    ordered = positions.tolist()
    ends = (np.flatnonzero(values[1:] != values[:-1]) + 1).tolist() + [len(ordered)]
    chosen: list[int] = []
    start = 0
    for end in ends:
        chosen += _by_ids(ordered[start:end], ids[start:end], limit - len(chosen))
        if len(chosen) >= limit:
            break
        start = end
    return chosen


def _by_ids(positions: list[int], ids: list[tuple[str, str]], wanted: int) -> list[int]:
    """The ``wanted`` first of ``positions`` (equal scores) by their ids; ids are distinct per document."""
    if len(positions) <= 1:
        return positions[:wanted]
    order = sorted(range(len(positions)), key=ids.__getitem__)  # a C-level key: no Python call per document
    return [positions[i] for i in order[:wanted]]
