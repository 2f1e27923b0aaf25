"""What every storage backend shares, written once beside the port.

Row mapping (the entry-version columns in one order, rows to models, citations), the decisions a commit makes before
it writes (which memory and revision; whether its events are consistent), and the bounded memo of vector
completeness. The DuckDB and seekdb backends both use these, so the contract suite holds them to one behaviour.
"""

from __future__ import annotations

import itertools
import json
import secrets
import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from pcmem.errors import StoreError, StoreFormatError
from pcmem.ids import new_id
from pcmem.lru import LRU
from pcmem.settings import SEARCH_FUSIONS, SearchFusion
from pcmem.types.embedding import EmbeddingProfile
from pcmem.types.memory import Citation, EntryState, EntryVersion, MemoryEntry, MemoryRef
from pcmem.types.search import Candidate
from pcmem.types.storage import ChannelCandidates, EntryEvent

if TYPE_CHECKING:
    import numpy as np

VERSION_FIELDS = (
    "entry_version_id", "entry_id", "version", "kind", "text", "content_hash", "metadata", "created_in_revision",
    "created_at",
)
VERSION_COLUMNS = ", ".join(VERSION_FIELDS)
# The same columns read through the alias ``v`` of entry_versions in joins.
V_COLUMNS = ", ".join(f"v.{name}" for name in VERSION_FIELDS)


def utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC)


def version_from_row(values: Sequence[Any]) -> EntryVersion:
    return EntryVersion(
        entry_version_id=values[0], entry_id=values[1], version=int(values[2]), kind=values[3], text=values[4],
        content_hash=values[5], metadata=json.loads(values[6]), created_in_revision=int(values[7]),
        created_at=utc(values[8]),
    )


def entry(memory: MemoryRef, state: EntryState, version: EntryVersion) -> MemoryEntry:
    """The entry as read from revision ``memory.revision``, with the citation that reads it back."""
    return MemoryEntry(citation=Citation.of(memory, version), state=state, entry=version)


def page_of(entries: list[MemoryEntry], after: str, limit: int | None) -> list[MemoryEntry]:
    """The part of a manifest (in entry-id order) a bounded read returns: ids after ``after``, compared as UTF-8
    bytes as paging cursors compare them, and at most ``limit``; for a backend whose SQL cannot be trusted to order
    ids by their bytes."""
    if not after and limit is None:
        return entries
    after_bytes = after.encode()
    entries = sorted((e for e in entries if e.entry.entry_id.encode() > after_bytes),
                     key=lambda e: e.entry.entry_id.encode())
    return entries if limit is None else entries[:limit]


def check_dimension(profile: EmbeddingProfile, batch: Mapping[str, np.ndarray]) -> None:
    import numpy as np  # lazy: a cold CLI call that searches full text only never imports numpy
    for version_id, vector in batch.items():
        if np.asarray(vector).reshape(-1).shape[0] != profile.dimension:
            raise StoreError(f"vector for {version_id} has {np.asarray(vector).size} dimensions, "
                             f"{profile.describe()} has {profile.dimension}")




# --- recorded writes: how long an idempotency key is kept ----------------------------------------------------------
# A client sends a write again only after its connection broke, within at most MAX_ATTEMPTS relinks of up to
# lock_timeout seconds each (pcmem.owner.client: under a minute by default); an HTTP or MCP caller with its own key
# may retry later. Records are pruned inside write transactions, so the table stays bounded without a sweeper.

#: A write's record (:mod:`pcmem.memory.write_records`) is kept this long after the write ...
RECORDS_KEPT_FOR = timedelta(hours=24)
#: ... but when more than this many are kept, the oldest go sooner ...
RECORDS_KEPT_AT_MOST = 10_000
#: ... never one younger than this, which is what a resend after a lost answer needs, with a wide margin.
RECORDS_KEPT_AT_LEAST_FOR = timedelta(hours=1)
#: The first write of a backend that records its key drops the records past their time, then every 64th one.
PRUNE_EVERY = 64


class RecordPruning:
    """When a recording write also drops the records past their keeping time (one per backend; thread-safe)."""

    def __init__(self) -> None:
        self._writes = itertools.count()

    def due(self) -> bool:
        return next(self._writes) % PRUNE_EVERY == 0


def prune_cutoffs(now: datetime) -> tuple[datetime, datetime]:
    """(recorded before this: dropped; before this and beyond the newest RECORDS_KEPT_AT_MOST: dropped)."""
    return now - RECORDS_KEPT_FOR, now - RECORDS_KEPT_AT_LEAST_FOR


# --- reads: a search's candidates ----------------------------------------------------------------------------------


def check_candidate_limit(limit: int) -> None:
    if limit < 1:
        raise StoreError(f"candidate limit must be positive, got {limit}")


def assemble_candidates(
    memory: MemoryRef,
    fts: list[Candidate],
    vector: list[Candidate],
    entry_versions: Callable[[Sequence[str]], dict[str, EntryVersion]],
) -> ChannelCandidates:
    """Both channels' candidates with every candidate's entry version; call it inside the read's transaction, so the
    versions come from the same snapshot as the candidates."""
    ids = list(dict.fromkeys(c.entry_version_id for c in (*fts, *vector)))
    return ChannelCandidates(memory=memory, fts=fts, vector=vector, versions=entry_versions(ids))

# --- writes: what every backend's commit decides before it writes anything ---------------------------------------


def next_revision(scope: str, memory: MemoryRef | None, artifact_id: str | None) -> tuple[str, int]:
    """The memory and revision a commit writes: revision 1 of a new memory (``artifact_id`` or a new id), else the
    head + 1 of the scope's memory. Naming another memory than the scope's raises StoreError."""
    if memory is None:
        return artifact_id or new_id("mem"), 1
    if artifact_id is not None and artifact_id != memory.artifact_id:
        raise StoreError(f"scope {scope!r} already has memory {memory.artifact_id}")
    return memory.artifact_id, memory.revision + 1


def check_events(
    events: Sequence[EntryEvent],
    new_versions: Sequence[EntryVersion],
    stored_version_ids: Callable[[Sequence[str]], set[str]],
) -> None:
    """Refuse a commit that would corrupt the log, before anything is written: an entry changed twice in one
    revision, or an event naming an entry version that is neither written by this commit nor stored already.
    ``stored_version_ids(ids)`` returns the subset of ``ids`` the store holds."""
    touched = [event.entry_id for event in events]
    if len(set(touched)) != len(touched):
        raise StoreError("a revision changes each entry at most once")
    written = {version.entry_version_id for version in new_versions}
    others = list(dict.fromkeys(e.entry_version_id for e in events if e.entry_version_id not in written))
    stored = stored_version_ids(others) if others else set()
    missing = [version_id for version_id in others if version_id not in stored]
    if missing:
        raise StoreError(f"events name unknown entry versions {missing[:3]}")


# --- vector availability -----------------------------------------------------------------------------------------

CompletenessKey = tuple[str, int, EmbeddingProfile]  # (artifact_id, revision, profile)


class CompletenessMemo(LRU[CompletenessKey, None]):
    """Which (artifact, revision, profile) are known to have a vector for every active head entry.

    Completeness changes only with a new revision or new vectors, so a "complete" answer is remembered per key and the
    O(scope) check runs once per revision; "incomplete" is never remembered (vectors may arrive). Bounded, least
    recently used first out: every write makes a new key, so a long-lived process would otherwise grow it forever.
    """

    def __init__(self, capacity: int = 1024) -> None:
        super().__init__(capacity)

    def known_complete(self, key: CompletenessKey) -> bool:
        return key in self

    def remember_complete(self, key: CompletenessKey) -> None:
        self.put(key, None)


class VersionCache(LRU[str, EntryVersion]):
    """Entry versions by id, least recently used first out: versions are immutable, so a search page's versions need
    not be read again — a hit costs no statement and no lookup in the store-wide version table.

    Erasure is the one change to a version (its text goes): the backend clears the cache when this process erases,
    and a version erased by another process is never asked for again, since a search asks only for the versions of
    its snapshot's active head entries.
    """

    def __init__(self, capacity: int = 20_000) -> None:
        super().__init__(capacity)

    def split(self, entry_version_ids: Sequence[str]) -> tuple[dict[str, EntryVersion], list[str]]:
        """(the cached versions, the ids still to read)."""
        found = self.get_many(entry_version_ids)
        return found, [version_id for version_id in entry_version_ids if version_id not in found]

    def add(self, versions: Mapping[str, EntryVersion]) -> None:
        for version_id, version in versions.items():
            self.put(version_id, version)


# --- the paging-cursor key ---------------------------------------------------------------------------------------

#: The ``pcmem_meta`` key under which a store keeps the secret its paging cursors are signed with.
PAGING_SECRET_KEY = "paging_secret"


def new_paging_secret() -> str:
    """32 random bytes (hex) for a store that has no paging secret yet; stored once, never replaced."""
    return secrets.token_hex(32)


class PagingSecret:
    """A backend's paging secret, read (or made) once: ``load`` returns the stored secret, creating it first when the
    store is writable, or ``None`` when it cannot (a read-only store made before cursors were signed). Then this
    process signs with a random secret of its own: its cursors work within the process and are refused elsewhere,
    which is safe (never a forgeable cursor) and costs only a fresh first page."""

    def __init__(self) -> None:
        self._secret: bytes | None = None
        self._lock = threading.Lock()

    def get(self, load: Callable[[], str | None]) -> bytes:
        with self._lock:
            if self._secret is None:
                stored = load()
                self._secret = stored.encode() if stored else secrets.token_bytes(32)
            return self._secret


# --- the store's search defaults ---------------------------------------------------------------------------------

#: The ``pcmem_meta`` key under which a store keeps its default fusion (absent: the contract's rrf).
SEARCH_FUSION_KEY = "search_fusion"


def stored_search_fusion(value: str | None) -> SearchFusion | None:
    """The store's default fusion as kept (``None``: none). A name this pcmem does not know (a newer pcmem's, or an
    edited file) is refused rather than searched with something else."""
    if value is None or value in SEARCH_FUSIONS:
        return value
    raise StoreFormatError(f"the store's default fusion is {value!r}, which this pcmem does not know (one of "
                           f"{', '.join(SEARCH_FUSIONS)}); set another with `pcmem fusion set NAME`")
