"""A forgotten key can be written again, as a new entry with a new identity (issue 29; pcmem/memory/keys.py).

Runs on every backend. Before the fix the second write of a forgotten key raised InputError ("ids of forgotten
entries are not reused"), so a returning user's facts could never be remembered again.
"""

from __future__ import annotations

import pytest
from fakes import TextHashEmbedder, TickingClock

from pcmem import (
    Citation,
    EntryErasedError,
    InputError,
    RetireRequest,
    ReviseRequest,
    RevisionConflictError,
)
from pcmem.compose.runtime import SyncRuntime


@pytest.fixture
def scope(backend):
    """On every backend (the ``backend`` fixture of conftest)."""
    return SyncRuntime(backend, embedder=TextHashEmbedder(), clock=TickingClock()).memory.for_scope("user:ana")


def test_a_forgotten_key_is_a_new_entry_and_old_citations_stay_erased(scope):
    old = scope.remember("Ana's phone is 555-0101.", entry_id="phone", upsert=True).citations[0]
    scope.forget("phone")
    new = scope.remember("Ana's phone is 555-0199.", entry_id="phone", upsert=True).citations[0]
    assert new.entry_id == "phone~2" and new.entry_version_id != old.entry_version_id
    with pytest.raises(EntryErasedError):
        scope.get(old)  # the old citation never reads the new text
    with pytest.raises(EntryErasedError):  # nor does the old citation moved to the head revision
        scope.get(Citation(artifact_id=old.artifact_id, revision=new.revision, entry_id="phone",
                           entry_version_id=old.entry_version_id))
    assert scope.tombstone("phone") is not None and scope.tombstone("phone~2") is None
    # The key names the new entry everywhere an entry id is taken.
    assert scope.get_entry("phone").entry.text == "Ana's phone is 555-0199."
    assert [e.entry.text for e in scope.history("phone").events] == ["Ana's phone is 555-0199."]
    current = scope.get_entry("phone").entry
    scope.revise(ReviseRequest(entry_id="phone", text="Ana's phone is 555-0123.", expected_version=current.version))
    assert scope.remember("Ana's phone is 555-0123.", entry_id="phone", upsert=True).unchanged
    with pytest.raises(InputError, match="already exist"):
        scope.remember("dup", entry_id="phone")  # without upsert the live key is still refused
    scope.retire(RetireRequest(entry_id="phone", expected_version=2))
    assert scope.get_entry("phone~2").state == "retired"
    # Forgetting the key again erases the live generation; the next write is a third identity.
    assert [c.entry_id for c in scope.forget("phone").citations] == ["phone~2"]
    assert scope.forget("phone").unchanged
    third = scope.remember("Ana has no phone.", entry_id="phone").citations[0]
    assert third.entry_id == "phone~3"
    texts = [e.entry.text for e in scope.list().entries]
    assert texts == ["Ana has no phone."], "no erased text came back"


def test_forget_scope_then_every_key_can_be_written_again(scope):
    for key in ("a", "b"):
        scope.remember(f"fact {key}", entry_id=key, upsert=True)
    scope.forget_scope()
    for key in ("a", "b"):
        scope.remember(f"new fact {key}", entry_id=key, upsert=True)
    assert sorted((e.citation.entry_id, e.entry.text) for e in scope.list().entries) == [
        ("a~2", "new fact a"), ("b~2", "new fact b")]


def test_generation_ids_are_reserved_and_cas_still_holds(scope):
    with pytest.raises(InputError, match="reserved"):
        scope.remember("by hand", entry_id="x~2")
    scope.remember("v1", entry_id="k", upsert=True)
    scope.forget("k")
    scope.remember("v2", entry_id="k", upsert=True)
    with pytest.raises(RevisionConflictError):
        scope.revise(ReviseRequest(entry_id="k", text="v3", expected_version=2))
