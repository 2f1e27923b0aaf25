"""What a ``remember`` writes, decided without touching the store: for each drafted entry, whether it is new, a new
version of an existing entry, an existing one made active again, or unchanged.

The write reads each draft's current identity (see :mod:`pcmem.memory.keys`) inside its transaction and hands it
here; :func:`plan_upsert` only decides, so every rule is testable on plain values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pcmem.errors import InputError
from pcmem.memory import keys
from pcmem.types.memory import EntryVersion
from pcmem.types.storage import EntryEvent, HeadEntry
from pcmem.validation import canonical_json


@dataclass(frozen=True)
class Identity:
    """A key's current identity in a write: the entry id it names now, that entry's head (``None`` when the write
    creates ``entry_id``), and whether the entry exists (it may exist without a live head: it was forgotten)."""

    entry_id: str
    current: HeadEntry | None
    exists: bool


@dataclass
class UpsertPlan:
    versions: list[EntryVersion] = field(default_factory=list)  # new versions to write
    events: list[EntryEvent] = field(default_factory=list)
    cited: list[EntryVersion] = field(default_factory=list)  # one per requested entry, in request order
    revived: list[EntryVersion] = field(default_factory=list)  # existing versions made active again
    unchanged: tuple[str, ...] = ()
    created: bool = False


def same_content(text: str, kind: str, metadata: dict[str, Any], old: EntryVersion) -> bool:
    """Text, kind and metadata equal as canonical JSON (types kept apart: true/1 and 1.0/1 differ)."""
    return (text, kind, canonical_json(metadata)) == (old.text, old.kind, canonical_json(old.metadata))


def plan_upsert(scope: str, drafts: Sequence[EntryVersion], identities: Mapping[str, Identity], upsert: bool,
                revision: int) -> UpsertPlan:
    """Decide what each drafted entry becomes in revision ``revision``: new, a new version, or unchanged.

    ``identities`` maps a draft's entry id to its identity in the store; a draft without one is new. Raises
    InputError for an id that exists without ``upsert``, or a new id ending in ``~<number>`` (reserved for keys
    written again after being forgotten).
    """
    plan = UpsertPlan()
    unchanged = []
    live: list[str] = []
    for draft in drafts:
        identity = identities.get(draft.entry_id) or Identity(draft.entry_id, None, False)
        entry_id, current = identity.entry_id, identity.current
        if identity.exists:
            live.append(entry_id)
        elif entry_id == draft.entry_id and keys.is_generation(entry_id):
            raise InputError(f"entry id {entry_id!r}: ids ending in ~<number> are reserved for keys written again "
                             "after being forgotten")
        if current is not None and same_content(draft.text, draft.kind, draft.metadata, current.version):
            plan.cited.append(current.version)
            if current.state == "active":
                unchanged.append(entry_id)
            else:
                plan.revived.append(current.version)
                plan.events.append(EntryEvent(entry_id, current.version.entry_version_id, "active"))
            continue
        version = draft.model_copy(update={
            "entry_id": entry_id,
            "created_in_revision": revision,
            "version": 1 if current is None else current.version.version + 1,
        })
        plan.created = plan.created or current is None
        plan.versions.append(version)
        plan.cited.append(version)
        plan.events.append(EntryEvent(version.entry_id, version.entry_version_id, "active"))
    if live and not upsert:
        raise InputError(f"entry ids already exist in scope {scope!r}: {sorted(live)[:5]}; use revise (or upsert)")
    plan.unchanged = tuple(unchanged)
    return plan
