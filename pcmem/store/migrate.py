"""Copy a whole store from one backend to another with every revision (``pcmem migrate``).

Only the storage port is used, so any backend pair works (DuckDB → seekdb is the point). Each scope's revisions
are replayed in order, each in its own write, with the source's artifact id, entry ids, entry version ids,
operations and timestamps: every citation of the source names the same entry version in the copy, and every past
manifest is identical. Vectors of the active embedding profile are copied with the versions they belong to, so the
copy needs no re-embedding. Afterwards the copy is verified scope by scope (summaries, revisions, the full change
log and the head manifest).

The destination must be empty. The source should not be written to while it is copied (a write that lands
meanwhile is reported by the verification, not copied).
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

from pcmem.errors import DestinationNotEmptyError, StoreError
from pcmem.store.port import StorageBackend
from pcmem.types.embedding import EmbeddingProfile
from pcmem.types.memory import Change, EntryVersion, MemoryRef, ScopeSummary
from pcmem.types.progress import Progress
from pcmem.types.storage import EntryEvent


@dataclass(frozen=True)
class MigrationReport:
    scopes: int
    revisions: int
    entry_versions: int
    vectors: int
    profile: EmbeddingProfile | None
    source_analyzer: str
    destination_analyzer: str
    seconds: float
    problems: list[str] = field(default_factory=list)

    @property
    def verified(self) -> bool:
        return not self.problems


def migrate(source: StorageBackend, destination: StorageBackend, progress: Progress | None = None) -> MigrationReport:
    """Copy every scope of ``source`` into the empty ``destination`` and verify the copy."""
    started = time.perf_counter()
    taken = destination.scope_summaries()
    if taken:
        raise DestinationNotEmptyError(
            f"the destination already holds {len(taken)} scope(s) (e.g. {taken[0].scope!r}); migrate copies into an "
            "empty store only"
        )
    profile = source.embedding_profile()
    if profile is not None:
        existing = destination.embedding_profile()
        if existing is None:
            destination.set_embedding_profile(profile)
        elif existing != profile:
            raise DestinationNotEmptyError(
                f"the destination's embedding profile is {existing.describe()}, the source's {profile.describe()}"
            )
    summaries = source.scope_summaries()
    total = sum(summary.head_revision for summary in summaries)
    done = [0]
    versions_copied = vectors_copied = 0

    def tick() -> None:
        done[0] += 1
        if progress:
            progress(done[0], total)

    if progress:
        progress(0, total)
    for summary in summaries:
        versions, vectors = _copy_scope(source, destination, summary, profile, tick)
        versions_copied += versions
        vectors_copied += vectors
    return MigrationReport(
        scopes=len(summaries), revisions=total, entry_versions=versions_copied, vectors=vectors_copied,
        profile=profile, source_analyzer=source.analyzer.name, destination_analyzer=destination.analyzer.name,
        seconds=time.perf_counter() - started, problems=verify(source, destination),
    )


def _copy_scope(
    source: StorageBackend, destination: StorageBackend, summary: ScopeSummary, profile: EmbeddingProfile | None,
    tick: Callable[[], object],
) -> tuple[int, int]:
    memory = MemoryRef(scope=summary.scope, artifact_id=summary.artifact_id, revision=summary.head_revision)
    by_revision: dict[int, list[Change]] = defaultdict(list)
    for change in source.changes(memory, 0):
        by_revision[change.revision].append(change)
    versions_copied = vectors_copied = 0
    placeholders: set[str] = set()  # versions of forgotten entries: their content no longer exists anywhere
    for info in source.revisions(memory):
        events = by_revision.get(info.revision, [])
        versions = source.entry_versions([change.entry_version_id for change in events])
        new_versions = [v for v in versions.values() if v.created_in_revision == info.revision]
        for change in events:  # replay an erased entry's history with empty versions, erased again below
            if change.entry_version_id not in versions and change.entry_version_id not in placeholders:
                placeholders.add(change.entry_version_id)
                new_versions.append(EntryVersion(
                    entry_id=change.entry_id, entry_version_id=change.entry_version_id, version=0, kind="erased",
                    text="", content_hash="", created_in_revision=info.revision, created_at=info.created_at))
        erased = [change.entry_id for change in events if change.state == "erased"]
        vectors = source.stored_vectors(profile, [v.entry_version_id for v in new_versions]) if profile else {}
        with destination.write(summary.scope) as tx:
            head = tx.memory.revision if tx.memory is not None else 0
            if head != info.revision - 1:
                raise StoreError(f"scope {summary.scope!r}: the destination is at revision {head} while copying "
                                 f"revision {info.revision}; is something else writing to it?")
            tx.commit(info.operation, new_versions,
                      [EntryEvent(c.entry_id, c.entry_version_id, c.state) for c in events],
                      info.created_at, vectors, artifact_id=summary.artifact_id, reason=info.reason)
            if erased:
                tx.erase(erased)
        versions_copied += len(new_versions)
        vectors_copied += len(vectors)
        tick()
    return versions_copied, vectors_copied


def verify(source: StorageBackend, destination: StorageBackend) -> list[str]:
    """Differences between two stores that should be copies (empty when they agree)."""
    problems: list[str] = []
    ours, theirs = source.scope_summaries(), destination.scope_summaries()
    if ours != theirs:
        problems.append(f"scope summaries differ: {len(ours)} scopes in the source, {len(theirs)} in the destination")
    by_scope = {summary.scope: summary for summary in theirs}
    for summary in ours:
        memory = MemoryRef(scope=summary.scope, artifact_id=summary.artifact_id, revision=summary.head_revision)
        copy = destination.find_memory(summary.scope)
        if copy != memory:
            problems.append(f"scope {summary.scope!r}: head {copy} instead of {memory}")
            continue
        for name, read in (
            ("revisions", lambda backend: backend.revisions(memory)),
            ("change log", lambda backend: backend.changes(memory, 0)),
            ("head manifest", lambda backend: backend.manifest(memory, include_retired=True)),
        ):
            if read(source) != read(destination):
                problems.append(f"scope {summary.scope!r}: the {name} differs")
        if summary.scope in by_scope and source.vector_status(summary.scope).complete != destination.vector_status(
            summary.scope
        ).complete:
            problems.append(f"scope {summary.scope!r}: vector completeness differs")
    return problems
