"""Upsert planning on plain values, without a store: what each drafted entry of a ``remember`` becomes."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from pcmem.errors import InputError
from pcmem.ids import content_hash
from pcmem.memory.upsert import Identity, plan_upsert
from pcmem.types.memory import EntryVersion
from pcmem.types.storage import EntryEvent, HeadEntry

NOW = datetime(2025, 1, 1, tzinfo=UTC)


def version(entry_id: str, text: str, *, number: int = 1, kind: str = "note", metadata: dict | None = None,
            version_id: str | None = None, revision: int = 0) -> EntryVersion:
    return EntryVersion(entry_id=entry_id, entry_version_id=version_id or f"ver-{entry_id}-{number}-{text}",
                        version=number, kind=kind, text=text, content_hash=content_hash(text),
                        metadata=metadata or {}, created_in_revision=revision, created_at=NOW)


def stored(entry_id: str, text: str, state: str = "active", **fields) -> Identity:
    return Identity(entry_id, HeadEntry(version=version(entry_id, text, revision=1, **fields), state=state), True)


def test_new_entries_become_first_versions_of_this_revision_in_request_order():
    drafts = [version("b", "second"), version("a", "first")]
    plan = plan_upsert("s", drafts, {}, upsert=False, revision=4)
    assert [(v.entry_id, v.version, v.created_in_revision) for v in plan.versions] == [("b", 1, 4), ("a", 1, 4)]
    assert plan.cited == plan.versions
    assert plan.events == [EntryEvent("b", drafts[0].entry_version_id, "active"),
                           EntryEvent("a", drafts[1].entry_version_id, "active")]
    assert plan.created and plan.unchanged == () and plan.revived == []


def test_an_existing_id_is_refused_without_upsert_and_revised_with_it():
    identities = {"k": stored("k", "old text", number=3)}
    with pytest.raises(InputError, match=r"already exist in scope 'proj': \['k'\]; use revise"):
        plan_upsert("proj", [version("k", "new text")], identities, upsert=False, revision=5)
    plan = plan_upsert("proj", [version("k", "new text")], identities, upsert=True, revision=5)
    assert [(v.entry_id, v.version, v.text) for v in plan.versions] == [("k", 4, "new text")]
    assert not plan.created  # a new version of an existing entry: the revision is a "revise"


def test_the_same_content_writes_nothing_when_active_and_reactivates_when_retired():
    identities = {"a": stored("a", "same"), "r": stored("r", "same", state="retired")}
    plan = plan_upsert("s", [version("a", "same"), version("r", "same")], identities, upsert=True, revision=2)
    assert plan.versions == []
    assert plan.unchanged == ("a",)
    assert plan.revived == [identities["r"].current.version]
    assert plan.events == [EntryEvent("r", identities["r"].current.version.entry_version_id, "active")]
    assert plan.cited == [identities["a"].current.version, identities["r"].current.version]


def test_metadata_is_compared_as_canonical_json_so_true_and_1_differ():
    identities = {"m": stored("m", "text", metadata={"flag": 1})}
    plan = plan_upsert("s", [version("m", "text", metadata={"flag": True})], identities, upsert=True, revision=2)
    assert [(v.version, v.metadata) for v in plan.versions] == [(2, {"flag": True})]
    kind_changed = plan_upsert("s", [version("m", "text", kind="fact", metadata={"flag": 1})], identities,
                               upsert=True, revision=2)
    assert [v.kind for v in kind_changed.versions] == ["fact"]


def test_a_forgotten_key_is_written_as_its_next_generation_and_a_new_generation_id_is_refused():
    plan = plan_upsert("s", [version("k", "again")], {"k": Identity("k~1", None, False)}, upsert=False, revision=7)
    assert [(v.entry_id, v.version) for v in plan.versions] == [("k~1", 1)]
    assert plan.created
    with pytest.raises(InputError, match="reserved for keys written again"):
        plan_upsert("s", [version("k~2", "text")], {}, upsert=True, revision=7)
