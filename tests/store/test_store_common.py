"""What both backends share (pcmem.store.common): the bounded completeness memo and the commit decisions."""

from __future__ import annotations

import pytest

from pcmem import StoreError
from pcmem.store.common import CompletenessMemo, next_revision
from pcmem.types.embedding import EmbeddingProfile
from pcmem.types.memory import MemoryRef

PROFILE = EmbeddingProfile("test", 4, True)


def test_completeness_memo_forgets_the_least_recently_used_beyond_its_bound():
    memo = CompletenessMemo(capacity=3)
    for revision in range(1, 5):
        memo.remember_complete(("mem", revision, PROFILE))
    assert len(memo) == 3
    assert not memo.known_complete(("mem", 1, PROFILE))  # the oldest went first
    assert memo.known_complete(("mem", 2, PROFILE))  # a hit makes it recent again
    memo.remember_complete(("mem", 5, PROFILE))
    assert memo.known_complete(("mem", 2, PROFILE)) and not memo.known_complete(("mem", 3, PROFILE))


def test_next_revision_starts_a_memory_or_moves_its_head():
    assert next_revision("s", None, "mem_given") == ("mem_given", 1)
    assert next_revision("s", None, None)[0].startswith("mem")
    head = MemoryRef(scope="s", artifact_id="mem_a", revision=7)
    assert next_revision("s", head, None) == ("mem_a", 8)
    with pytest.raises(StoreError, match="already has memory"):
        next_revision("s", head, "mem_b")
