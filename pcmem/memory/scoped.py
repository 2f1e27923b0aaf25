"""The semantics of one scope's Memory, synchronous.

This is where remember/revise/retire/reactivate decide what a revision contains, where compare-and-swap is checked
and where the per-scope mutation lock is held. Storage is delegated to a :class:`~pcmem.store.port.StorageBackend`.
The async API (:class:`pcmem.memory.service.ScopedMemory`) runs these methods in a worker thread.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from pcmem.errors import (
    EntryErasedError,
    EntryNotFoundError,
    EntryStateError,
    ScopeNotFoundError,
)
from pcmem.ids import content_hash, new_id
from pcmem.memory import arguments, write_records
from pcmem.memory import write_rules as rules
from pcmem.memory.parts import RuntimeShared
from pcmem.memory.scoped_reads import ScopedReads
from pcmem.memory.upsert import Identity, plan_upsert, same_content
from pcmem.memory.vectors import NOTHING_PREPARED, Prepared
from pcmem.memory.write_records import KeyedWrite
from pcmem.native_calls import entry_points
from pcmem.store.port import GroupedWrites, WriteTransaction
from pcmem.types.memory import (
    Citation,
    Duplicate,
    EntryState,
    EntryVersion,
    ForgetRequest,
    MemoryEntry,
    MemoryRef,
    NewEntry,
    Operation,
    ReactivateRequest,
    RememberRequest,
    RetireRequest,
    ReviseRequest,
    WriteResult,
)
from pcmem.types.storage import EntryEvent, HeadEntry

if TYPE_CHECKING:
    from datetime import datetime

    import numpy as np


@entry_points  # each call counts as one native call: see pcmem.native_calls
class SyncScopedMemory(ScopedReads):
    """Blocking operations on one scope. Obtain it from ``SyncRuntime.memory.for_scope(scope)``. The reads are
    :class:`~pcmem.memory.scoped_reads.ScopedReads`; the writes, which decide what a revision contains, are here."""

    def __init__(self, parts: RuntimeShared, scope: str) -> None:
        super().__init__(parts, scope)
        self._vectors = parts.embedders
        self._lock = parts.locks(self.scope)
        self._clock = parts.clock

    # --- writes -----------------------------------------------------------------------------------------------

    def remember(
        self,
        request: RememberRequest | NewEntry | str,
        *,
        kind: str | None = None,
        metadata: dict[str, Any] | None = None,
        entry_id: str | None = None,
        upsert: bool = False,
        allow_duplicates: bool = False,
        expected_revision: int | None = None,
        reason: str | None = None,
        idempotency_key: str | None = None,
    ) -> WriteResult:
        """Add entries in one new revision (creating the scope's memory on first use).

        ``request`` is a :class:`RememberRequest`, one :class:`NewEntry` or a text; with a text, ``kind``,
        ``metadata`` and ``entry_id`` build the entry (``remember("...", entry_id="k", upsert=True)``), and the other
        keywords are the :class:`RememberRequest`'s (see :mod:`pcmem.memory.arguments`).
        Returns a :class:`WriteResult` with a citation per entry written or left unchanged, in request order.
        Without ``expected_revision`` a race lost to another process is retried internally; with it, a head other
        than the expected one raises RevisionConflictError. ``idempotency_key`` makes the write happen once: sent
        again with the same key (after a lost answer), it returns the first outcome (:mod:`.write_records`). Raises
        InputError (bad values, an existing id without upsert, a reserved ``~<number>`` id; a forgotten key is written
        as a new entry: :mod:`pcmem.memory.keys`), ConfigurationError (no embedder for the store's vectors),
        EmbeddingError, StoreError. Nothing is written when it raises.
        """
        request = arguments.remember_request(
            request, entry={"kind": kind, "metadata": metadata, "entry_id": entry_id}, upsert=upsert,
            allow_duplicates=allow_duplicates, options={"expected_revision": expected_revision, "reason": reason})
        keyed = write_records.of_remember(arguments.idempotency_key(idempotency_key), self.scope, request)
        return rules.retrying(lambda: self._remember(request, keyed), retry=request.expected_revision is None)

    def _remember(self, request: RememberRequest, keyed: KeyedWrite | None) -> WriteResult:
        if request.expected_revision is not None and self._parts.write_gate is not None and keyed is None:
            rules.check_head(self.head(), request.expected_revision)  # fail fast, before spending model decisions
        duplicates = self._gate(request)
        skipped = {duplicate.index for duplicate in duplicates}
        entries = [entry for index, entry in enumerate(request.entries) if index not in skipped]
        if not entries and keyed is None:
            memory = self.head()
            assert memory is not None  # the gate only runs on a scope with memory
            return WriteResult(memory=memory, citations=(), duplicates=duplicates)
        now = self._clock()
        if not entries:
            return self._write(lambda tx: self._all_duplicates(tx, request, duplicates), keyed, now)
        drafts = [rules.first_version(entry, 0, now) for entry in entries]
        # Embedding is the slow part of a write: do it before the write transaction.
        texts = {v.entry_version_id: v.text for v in drafts}
        prepared = self._vectors.prepare_vectors(texts)
        secondary = self._vectors.secondary_for(texts)

        def write(tx: WriteTransaction) -> WriteResult:
            rules.check_expected(tx, request.expected_revision)
            revision = rules.next_revision(tx)
            # Only the ids the caller named can exist already: one pcmem generated is new by construction
            # (pcmem.ids.new_id), so looking it up would cost a statement per remember and find nothing.
            identities = rules.identities(tx, [entry.entry_id for entry in entries if entry.entry_id is not None])
            plan = plan_upsert(self.scope, drafts, identities, request.upsert, revision)
            if not plan.events:
                assert tx.memory is not None
                return write_result(tx.memory, plan.cited, "active", duplicates=duplicates, unchanged=True,
                               unchanged_entry_ids=plan.unchanged)
            written = {v.entry_version_id: v.text for v in plan.versions}
            vectors = self._vectors.vectors_to_commit(
                tx, written, Prepared(prepared.profile, {k: prepared.vectors[k] for k in written
                                                         if k in prepared.vectors}))
            vectors.update(self._revived_vectors(tx, plan.revived))
            self._vectors.store_secondary(tx, written, secondary)
            self._revived_secondary(tx, plan.revived)
            memory = tx.commit("remember" if plan.created else "revise", plan.versions, plan.events, now, vectors,
                               reason=request.reason)
            return write_result(memory, plan.cited, "active", duplicates=duplicates, unchanged_entry_ids=plan.unchanged)

        return self._write(write, keyed, now)

    def _all_duplicates(self, tx: WriteTransaction, request: RememberRequest,
                        duplicates: tuple[Duplicate, ...]) -> WriteResult:
        """The gate found every entry stated already: nothing is written (a key still records this outcome)."""
        rules.check_expected(tx, request.expected_revision)
        assert tx.memory is not None  # the gate only runs on a scope with memory
        return WriteResult(memory=tx.memory, citations=(), duplicates=duplicates)

    def _write(self, write: Callable[[WriteTransaction], WriteResult], keyed: KeyedWrite | None,
               now: datetime) -> WriteResult:
        """One write transaction of this scope running ``write`` (once per idempotency key: :mod:`.write_records`):
        grouped with other threads' writes where the backend commits them together (one COMMIT and fsync for the
        group), else under the scope lock."""
        body = write_records.once(keyed, write, now, self._backend.entry_versions)
        if isinstance(self._backend, GroupedWrites):
            return self._backend.write_grouped(self.scope, body)
        with self._lock, self._backend.write(self.scope) as tx:
            return body(tx)

    def _revived_vectors(self, tx: WriteTransaction, revived: builtins.list[EntryVersion]) -> dict[str, np.ndarray]:
        """Vectors for versions made active again that were written unembedded (rare)."""
        missing = tx.missing_vectors([v.entry_version_id for v in revived]) if revived else set()
        texts = {v.entry_version_id: v.text for v in revived if v.entry_version_id in missing}
        return self._vectors.vectors_to_commit(tx, texts, NOTHING_PREPARED) if texts else {}

    def _revived_secondary(self, tx: WriteTransaction, revived: builtins.list[EntryVersion]) -> None:
        """Secondary vectors of versions made active again (rare; re-embedded, as a stored one may be missing)."""
        if revived:
            self._vectors.store_secondary(tx, {v.entry_version_id: v.text for v in revived}, NOTHING_PREPARED)

    def _gate(self, request: RememberRequest) -> tuple[Duplicate, ...]:
        """Ask the write gate (if any) about each entry; runs before the scope lock is taken."""
        gate = self._parts.write_gate
        if gate is None or request.allow_duplicates or self.head() is None:
            return ()
        return gate.duplicates(request, lambda search: self._parts.search.coarse((self.scope,), search))

    def revise(self, request: ReviseRequest | str, *, text: str | None = None, kind: str | None = None,
               metadata: dict[str, Any] | None = None, expected_revision: int | None = None,
               expected_version: int | None = None, reason: str | None = None,
               idempotency_key: str | None = None) -> WriteResult:
        """Write a new version of an active entry. An unchanged text/kind/metadata writes nothing (``unchanged``).

        ``request`` is a :class:`ReviseRequest`, or the entry id with its fields as keywords
        (``revise("k", text="...", expected_version=2)``). Compare-and-swap on ``expected_revision`` (the scope
        head) and/or ``expected_version`` (the entry's version: writes to other entries never conflict with it).
        ``idempotency_key``: as :meth:`remember`. Returns a :class:`WriteResult` with the new version's citation.
        Raises RevisionConflictError when an expectation does not hold or the entry is retired, EntryNotFoundError /
        EntryErasedError, ConfigurationError, EmbeddingError, StoreError.
        """
        request = arguments.request_of(ReviseRequest, request, "revise", "entry_id", {
            "text": text, "kind": kind, "metadata": metadata, "expected_revision": expected_revision,
            "expected_version": expected_version, "reason": reason})
        keyed = self._keyed(idempotency_key, "revise", request)
        return rules.retrying(lambda: self._revise(request, keyed), retry=request.expected_revision is None)

    def _keyed(self, key: object, operation: str,
               request: ReviseRequest | RetireRequest | ReactivateRequest) -> KeyedWrite | None:
        return write_records.of_head_write(arguments.idempotency_key(key), self.scope, operation, request.entry_id,
                                           request.expected_revision, request.expected_version)

    def _revise(self, request: ReviseRequest, keyed: KeyedWrite | None) -> WriteResult:
        now = self._clock()
        version_id = new_id("ver")
        prepared = self._vectors.prepare_vectors({version_id: request.text})
        secondary = self._vectors.secondary_for({version_id: request.text})
        def write(tx: WriteTransaction) -> WriteResult:
            current = self._head_entry(tx, request)
            assert tx.memory is not None  # the entry exists, so the scope has a head
            if current.state != "active":
                raise EntryStateError(f"entry {request.entry_id!r} is retired; reactivate it before revising",
                                      state=current.state)
            old = current.version
            kind = request.kind if request.kind is not None else old.kind
            metadata = request.metadata if request.metadata is not None else old.metadata
            # Canonical JSON keeps types apart: true/1 and 1.0/1 are different metadata (Python's == says equal).
            if same_content(request.text, kind, metadata, old):
                assert tx.memory is not None
                return write_result(tx.memory, [old], "active", unchanged=True, unchanged_entry_ids=(old.entry_id,))
            version = EntryVersion(
                entry_id=old.entry_id,
                entry_version_id=version_id,
                version=old.version + 1,
                kind=kind,
                text=request.text,
                content_hash=content_hash(request.text),
                metadata=metadata,
                created_in_revision=rules.next_revision(tx),
                created_at=now,
            )
            event = EntryEvent(old.entry_id, version.entry_version_id, "active")
            vectors = self._vectors.vectors_to_commit(tx, {version_id: request.text}, prepared)
            self._vectors.store_secondary(tx, {version_id: request.text}, secondary)
            memory = tx.commit("revise", [version], [event], now, vectors, reason=request.reason)
            return write_result(memory, [version], "active")

        return self._write(write, keyed, now)

    def retire(self, request: RetireRequest | str, *, expected_revision: int | None = None,
               expected_version: int | None = None, reason: str | None = None,
               idempotency_key: str | None = None) -> WriteResult:
        """Deactivate an entry; it stays readable in past revisions and in its history.

        A :class:`RetireRequest`, or the entry id and its fields as keywords; compare-and-swap and
        ``idempotency_key`` as :meth:`revise`. Returns the :class:`WriteResult` of the new revision. Raises
        RevisionConflictError (an expectation does not hold, or the entry is already retired), EntryNotFoundError /
        EntryErasedError, StoreError.
        """
        retire = arguments.request_of(RetireRequest, request, "retire", "entry_id", {
            "expected_revision": expected_revision, "expected_version": expected_version, "reason": reason})
        keyed = self._keyed(idempotency_key, "retire", retire)
        return self._set_state(retire, "retire", keyed, from_state="active", to_state="retired")

    def reactivate(self, request: ReactivateRequest | str, *, expected_revision: int | None = None,
                   expected_version: int | None = None, reason: str | None = None,
                   idempotency_key: str | None = None) -> WriteResult:
        """Make a retired entry active again at the version it had.

        A :class:`ReactivateRequest`, or the entry id and its fields as keywords; compare-and-swap and
        ``idempotency_key`` as :meth:`revise`. Returns the :class:`WriteResult` of the new revision. Raises
        RevisionConflictError (an expectation does not hold, or the entry is active), EntryNotFoundError /
        EntryErasedError, ConfigurationError (its vector is missing and no embedder fits), StoreError.
        """
        reactivate = arguments.request_of(ReactivateRequest, request, "reactivate", "entry_id", {
            "expected_revision": expected_revision, "expected_version": expected_version, "reason": reason})
        keyed = self._keyed(idempotency_key, "reactivate", reactivate)
        return self._set_state(reactivate, "reactivate", keyed, from_state="retired", to_state="active")

    def _set_state(
        self,
        request: RetireRequest | ReactivateRequest,
        operation: Operation,
        keyed: KeyedWrite | None,
        *,
        from_state: EntryState,
        to_state: EntryState,
    ) -> WriteResult:
        return rules.retrying(lambda: self._set_state_once(request, operation, keyed, from_state, to_state),
                         retry=request.expected_revision is None)

    def _set_state_once(self, request: RetireRequest | ReactivateRequest, operation: Operation,
                        keyed: KeyedWrite | None, from_state: EntryState, to_state: EntryState) -> WriteResult:
        now = self._clock()
        def write(tx: WriteTransaction) -> WriteResult:
            current = self._head_entry(tx, request)
            if current.state != from_state:
                raise EntryStateError(f"cannot {operation} entry {request.entry_id!r}: it is {current.state}",
                                      state=current.state)
            version = current.version
            vectors: dict[str, np.ndarray] = {}
            if to_state == "active":
                vectors = self._revived_vectors(tx, [version])
                self._revived_secondary(tx, [version])
            event = EntryEvent(version.entry_id, version.entry_version_id, to_state)
            memory = tx.commit(operation, [], [event], now, vectors, reason=request.reason)
            return write_result(memory, [version], to_state)

        return self._write(write, keyed, now)

    def _head_entry(self, tx: WriteTransaction, request: ReviseRequest | RetireRequest | ReactivateRequest) -> HeadEntry:
        rules.check_expected(tx, request.expected_revision)
        current = rules.identity(tx, request.entry_id).current
        if current is None:
            if tx.memory is not None and tx.existing_entry_ids([request.entry_id]):
                raise EntryErasedError(f"entry {request.entry_id!r} of scope {self.scope!r} was forgotten",
                                       tombstone=self._backend.tombstone(tx.memory, request.entry_id))
            raise EntryNotFoundError(f"no entry {request.entry_id!r} in scope {self.scope!r}")
        rules.check_version(current, request.expected_version)
        return current

    # --- erasure ----------------------------------------------------------------------------------------------

    def forget(self, entry_id: str | ForgetRequest, *, idempotency_key: str | None = None) -> WriteResult:
        """Erase an entry for good: the text, kind-independent metadata and vectors of every version it ever had.

        Unlike every other write this changes the past: all revisions that held the entry lose its content. The
        revision chain stays intact — a new revision (operation ``forget``) records a tombstone with the entry's ids
        — and citations of the entry resolve to EntryErasedError. When it returns, the erased bytes are no longer in
        the store (the DuckDB file is checkpointed and the freed space overwritten; guide: "Forgetting"). Forgetting an
        entry already erased is a no-op (``unchanged``). ``idempotency_key``: as :meth:`remember` (sent again, it
        answers what it erased then, and erases nothing written since). Returns the :class:`WriteResult` of the
        forget revision (its citation names the erased version). Raises EntryNotFoundError for an unknown entry,
        StoreError. Cannot be undone.
        """
        key = arguments.entry_id_of(entry_id, ForgetRequest)
        keyed = write_records.keyed(arguments.idempotency_key(idempotency_key), self.scope, "forget", {"entry_id": key})
        return rules.retrying(lambda: self._forget([key], keyed, whole_scope=False), retry=True)

    def forget_scope(self, *, idempotency_key: str | None = None) -> WriteResult:
        """Erase every entry of this scope as :meth:`forget` does, in one revision (a no-op when nothing is left).

        Returns the :class:`WriteResult` of the forget revision (``unchanged`` when there was nothing to erase; a
        scope with no memory raises ScopeNotFoundError). The scope keeps its revision chain and can be written
        again; a forgotten key written again is a new entry (see :mod:`pcmem.memory.keys`). ``idempotency_key``: as
        :meth:`forget`. Raises StoreError. Cannot be undone.
        """
        keyed = write_records.keyed(arguments.idempotency_key(idempotency_key), self.scope, "forget_scope", {})
        return rules.retrying(lambda: self._forget([], keyed, whole_scope=True), retry=True)

    def _forget(self, entry_ids: builtins.list[str], keyed: KeyedWrite | None, *, whole_scope: bool) -> WriteResult:
        now = self._clock()
        erased: builtins.list[bool] = []
        with self._lock, self._backend.write(self.scope) as tx:
            result = write_records.once(keyed, lambda tx: self._erase(tx, entry_ids, whole_scope, now, erased), now)(tx)
        if erased:
            self._backend.reclaim()  # after the commit: checkpoint and overwrite the freed space
        return result

    def _erase(self, tx: WriteTransaction, entry_ids: builtins.list[str], whole_scope: bool, now: datetime,
               erased: builtins.list[bool]) -> WriteResult:
        """Inside ``tx``: the forget revision of these entries (or of every entry), their content erased."""
        memory = tx.memory
        if memory is None:
            if whole_scope:
                raise ScopeNotFoundError(f"scope {self.scope!r} has no memory (nothing was remembered in it)")
            raise EntryNotFoundError(f"no entry {entry_ids[0]!r} in scope {self.scope!r} (it has no memory)")
        if whole_scope:
            entry_ids = [e.entry.entry_id for e in self._backend.manifest(memory, include_retired=True)]
        events: builtins.list[EntryEvent] = []
        versions: builtins.list[EntryVersion] = []
        gone: builtins.list[str] = []
        for key in entry_ids:
            found = rules.identity(tx, key) if not whole_scope else Identity(key, tx.head_entry(key), True)
            entry_id, current = found.entry_id, found.current
            if current is None:
                entry_id = key
                if not tx.existing_entry_ids([entry_id]):
                    raise EntryNotFoundError(f"no entry {entry_id!r} in scope {self.scope!r}")
                gone.append(entry_id)
                continue
            versions.append(current.version)
            events.append(EntryEvent(entry_id, current.version.entry_version_id, "erased"))
        if not events:
            return WriteResult(memory=memory, citations=(), unchanged=True, unchanged_entry_ids=tuple(gone))
        committed = tx.commit("forget", [], events, now, {})
        tx.erase([event.entry_id for event in events])
        erased.append(True)
        return WriteResult(memory=committed, citations=tuple(Citation.of(committed, v) for v in versions),
                           unchanged_entry_ids=tuple(gone))


def write_result(memory: MemoryRef, versions: Sequence[EntryVersion], state: EntryState, **rest: Any) -> WriteResult:
    """The result of a write that left ``versions`` in ``state`` at ``memory``: their citations, and the entries
    themselves (a caller shows what it wrote without reading it back)."""
    citations = tuple(Citation.of(memory, version) for version in versions)
    entries = tuple(MemoryEntry(citation=citation, state=state, entry=version)
                    for citation, version in zip(citations, versions, strict=True))
    return WriteResult(memory=memory, citations=citations, entries=entries, **rest)
