"""Pure conversions between pcmem's models and PowerContext's v1 wire models (:mod:`pcmem.serve.wire`)."""

from __future__ import annotations

import unicodedata
from collections.abc import Callable

import pcmem
from pcmem.serve import wire

_STATE = {"active": wire.MemoryEntryState.active, "retired": wire.MemoryEntryState.inactive,
          "erased": wire.MemoryEntryState.inactive}
_OPERATION = {
    "remember": wire.EntryChangeOperation.add,
    "revise": wire.EntryChangeOperation.revise,
    "retire": wire.EntryChangeOperation.deactivate,
    "reactivate": wire.EntryChangeOperation.reactivate,
    # pcmem's erasure has no v1 operation; to a v1 client the entry leaves the active set.
    "forget": wire.EntryChangeOperation.deactivate,
}


def artifact_reference(artifact_id: str, revision: int) -> wire.ArtifactReference:
    return wire.ArtifactReference(family=wire.MEMORY_FAMILY, artifact_id=artifact_id, revision=revision)


def memory_reference(memory: pcmem.MemoryRef | None) -> wire.ArtifactReference | None:
    return None if memory is None else artifact_reference(memory.artifact_id, memory.revision)


def citation(value: pcmem.Citation) -> wire.MemoryCitation:
    return wire.MemoryCitation(
        memory_ref=artifact_reference(value.artifact_id, value.revision),
        entry_id=value.entry_id,
        entry_version_id=value.entry_version_id,
    )


def pcmem_citation(value: wire.MemoryCitation) -> pcmem.Citation | None:
    """The pcmem citation, or ``None`` when it names another artifact family (so it cannot be a Memory entry)."""
    if value.memory_ref.family != wire.MEMORY_FAMILY:
        return None
    return pcmem.Citation(artifact_id=value.memory_ref.artifact_id, revision=value.memory_ref.revision,
                          entry_id=value.entry_id, entry_version_id=value.entry_version_id)


_RECORD_STATE = {"active": wire.AtomicMemoryState.active, "retired": wire.AtomicMemoryState.retired,
                 "erased": wire.AtomicMemoryState.forgotten}
#: Where PowerContext's entry tags live in pcmem: a list of labels under this metadata key.
TAGS_KEY = "tags"


def record(value: pcmem.MemoryEntry) -> wire.AtomicMemoryRecord:
    """An entry as PowerContext 1.4.1's record: ``artifact`` names the entry (id, version), ``state_version`` the
    scope revision it was read at."""
    return wire.AtomicMemoryRecord(
        artifact=artifact_reference(value.entry.entry_id, value.entry.version),
        kind=value.entry.kind, text=value.entry.text, state=_RECORD_STATE[value.state],
        state_version=value.citation.revision, merged_into_id=None,
    )


def hit_record(hit: pcmem.MemoryHit) -> wire.AtomicMemoryRecord:
    """A search hit as :func:`record` shows its entry, from the hit alone: a search reads a scope's active head
    entries, so a hit is active in the revision it cites, and it carries its version (no read per hit)."""
    assert hit.version is not None
    return wire.AtomicMemoryRecord(
        artifact=artifact_reference(hit.citation.entry_id, hit.version), kind=hit.kind, text=hit.text,
        state=wire.AtomicMemoryState.active, state_version=hit.citation.revision, merged_into_id=None,
    )


def entry_tags(value: pcmem.MemoryEntry | pcmem.MemoryHit) -> list[str]:
    metadata = value.metadata if isinstance(value, pcmem.MemoryHit) else value.entry.metadata
    tags = metadata.get(TAGS_KEY)
    return [tag for tag in tags if isinstance(tag, str)] if isinstance(tags, list) else []


def tag_key(label: str) -> str:
    """How labels compare: NFC, then casefold (PowerContext's rule)."""
    return unicodedata.normalize("NFC", label).casefold()


def tags_match(value: pcmem.MemoryEntry | pcmem.MemoryHit, tag_filter: wire.TagFilter | None) -> bool:
    if tag_filter is None:
        return True
    have = {tag_key(tag) for tag in entry_tags(value)}
    wanted = [tag_key(tag) for tag in tag_filter.tags]
    return all(tag in have for tag in wanted) if tag_filter.match is wire.TagMatch.all \
        else any(tag in have for tag in wanted)


def changes_response(
    page: pcmem.ChangesPage | None, previous_version: Callable[[str, int], str | None]
) -> wire.ListMemoryChangesResponse:
    """Group pcmem's per-entry changes by revision. ``previous_version(entry_id, revision)`` answers the version an
    entry had just before ``revision`` when this page does not show it (a revise whose add is older than the page)."""
    if page is None or page.memory is None:
        return wire.ListMemoryChangesResponse(memory=None, revisions=[])
    last_version: dict[str, str] = {}
    revisions: dict[int, list[wire.EntryChange]] = {}
    for change in page.changes:
        op = _OPERATION[change.operation]
        source: str | None = None
        target: str | None = change.entry_version_id
        if op is wire.EntryChangeOperation.revise:
            source = last_version.get(change.entry_id) or previous_version(change.entry_id, change.revision)
        elif op is wire.EntryChangeOperation.deactivate:
            source, target = change.entry_version_id, None
        last_version[change.entry_id] = change.entry_version_id
        revisions.setdefault(change.revision, []).append(wire.EntryChange(
            op=op, entry_id=change.entry_id, from_entry_version_id=source, to_entry_version_id=target,
            reason=change.reason,
        ))
    artifact_id = page.memory.artifact_id
    return wire.ListMemoryChangesResponse(
        memory=memory_reference(page.memory),
        revisions=[wire.MemoryRevisionChanges(memory_ref=artifact_reference(artifact_id, revision), changes=changes)
                   for revision, changes in sorted(revisions.items())],
    )
