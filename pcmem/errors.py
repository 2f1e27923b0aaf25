"""The one exception hierarchy of pcmem.

Every error the library raises on purpose derives from :class:`PcmemError`. Driver errors (DuckDB, fastembed,
llama.cpp) are translated at the adapter boundary, so callers never need to import a driver to catch a failure.
The library raises; only the CLI and the TUI render errors for people.
"""

from __future__ import annotations


class PcmemError(Exception):
    """Root of every error pcmem raises on purpose."""

    #: Process exit status the CLI uses for this failure domain.
    exit_code: int = 1


class InputError(PcmemError, ValueError):
    """A caller passed a value pcmem refuses (empty text, bad id, oversize metadata, ...). Nothing was written."""

    exit_code = 2


class StoreSchemeError(InputError):
    """A store target starts with a URL scheme no storage engine is registered for (see ``pcmem.settings.STORE_SCHEMES``);
    the message lists the known ones. Nothing was opened."""


class DestinationNotEmptyError(InputError):
    """``pcmem migrate`` copies into an empty store only (no scope, and no embedding profile but the source's)."""


class NotFoundError(PcmemError, LookupError):
    """A scope, entry, revision or citation does not exist."""

    exit_code = 4


class ScopeNotFoundError(NotFoundError):
    """The scope has no memory yet (nothing was ever remembered in it)."""


class EntryNotFoundError(NotFoundError):
    """The entry or entry version does not exist in this scope."""


class RevisionNotFoundError(NotFoundError):
    """The revision number is outside 1..head of the scope."""


class EntryErasedError(EntryNotFoundError):
    """The entry was forgotten (erased): its texts and metadata are gone for good; ``tombstone`` says which ids it
    had and which revision forgot it. A citation of any of its versions resolves to this error."""

    def __init__(self, message: str, *, tombstone: object = None) -> None:
        super().__init__(message)
        #: A :class:`pcmem.types.memory.Tombstone`.
        self.tombstone = tombstone


class RevisionConflictError(PcmemError):
    """A compare-and-swap write cited a revision that is no longer the head, or the entry is in the wrong state."""

    exit_code = 3

    def __init__(self, message: str, *, expected: int | None = None, actual: int | None = None,
                 about: str = "revision") -> None:
        super().__init__(message)
        self.expected = expected
        self.actual = actual
        #: What ``expected`` and ``actual`` count: ``"revision"`` (the scope's head) or ``"version"`` (the entry's).
        self.about = about


class EntryStateError(RevisionConflictError):
    """The entry is not in the state the write needs: a revise or retire of a retired entry (``state`` is
    ``"retired"``), a reactivate of an active one (``"active"``). Nothing was written."""

    def __init__(self, message: str, *, state: str = "retired", expected: int | None = None,
                 actual: int | None = None, about: str = "state") -> None:
        super().__init__(message, expected=expected, actual=actual, about=about)
        #: The state the entry is in.
        self.state = state


class ConcurrentWriteError(RevisionConflictError):
    """Another writer (another process on the same store) committed to the same scope at the same moment.

    Nothing was written and retrying is safe. Writes that carry no scope expectation (``remember``, and
    revise/retire/reactivate with only ``expected_version``) retry this internally a few times before raising it.
    """


class InvalidCursorError(InputError):
    """A paging cursor is not one pcmem issued for this scope and this kind of read (or it was altered)."""


class StaleCursorError(InvalidCursorError):
    """A paging cursor's revision was rewritten by an erasure after it was issued; start again without a cursor."""


class CapabilityNotSupportedError(PcmemError):
    """An explicitly requested search mode is not available for this store; pcmem never silently downgrades."""

    exit_code = 6
    #: The capability's name on the wire (PowerContext's error ``details.capability``), when one is named.
    capability: str | None = None


class ConfigurationError(PcmemError):
    """The runtime was composed with settings that cannot work (missing model, bad environment value, ...)."""

    exit_code = 7


class StoreError(PcmemError):
    """The store file could not be read or written."""

    exit_code = 5


class StoreFormatError(StoreError):
    """The file is not a pcmem store (not DuckDB at all, a damaged file, or a DuckDB file that belongs to something
    else). pcmem leaves it untouched."""


class StoreLockedError(StoreError):
    """Another process holds the store file (the message names it when the system says who)."""

    exit_code = 10


class OwnerStoppedError(StoreLockedError):
    """The pcmem process that holds the store is stopped (SIGSTOP: Ctrl-Z, a debugger, a suspended job): it keeps its
    lock on the file, so no other process can take the store over, and it answers nothing until it is resumed. The
    message names it and says what to do (``kill -CONT PID``, ``fg``, or end it). A write sent to it before it
    stopped runs when it resumes. ``pid`` and ``command`` name the process."""

    def __init__(self, message: str, *, pid: int | None = None, command: str | None = None) -> None:
        super().__init__(message)
        self.pid = pid
        self.command = command


class StorePermissionError(StoreError):
    """The operating system denied access to the store file or its folder."""

    exit_code = 11


class UnsafeRuntimeFolderError(StorePermissionError):
    """The folder owners listen in belongs to another user or others may enter it: pcmem neither listens nor
    connects there."""


class StoreReadOnlyError(StoreError):
    """The store file (or its folder) is read-only: reads work, a write is refused."""

    exit_code = 12


class StoreMissingError(StoreError):
    """There is no store at the path (a read command never creates one; only writes and ``init`` do)."""

    exit_code = 13


class StoreWALError(StoreError):
    """The store's write-ahead log (``FILE.wal``) is left over damaged: opening would silently drop acknowledged
    writes, so pcmem refuses and says how to set the log aside."""

    exit_code = 14


class StoreVersionError(StoreError):
    """The store was written by a newer pcmem whose schema this version does not know."""


class DuplicateKeyError(StoreError):
    """A seekdb write broke a unique key (MySQL error 1062): the row is there already."""


class SnapshotMoved(StoreError):
    """A search served from a backend's memory needed the file after a write had begun since: nothing was read yet,
    so the search runs again (see :meth:`pcmem.store.port.Snapshots.reading`). Never reaches a user."""


class EmbeddingError(PcmemError):
    """The embedding model could not be loaded or failed on an input."""

    exit_code = 8


class InferenceError(PcmemError):
    """A local model failed while pcmem was using it. Rerank fails closed: these are raised, never hidden."""

    exit_code = 9


class InferenceTimeoutError(InferenceError):
    """Generation ran past ``generation_timeout_seconds`` and was aborted."""


class InferenceUnavailableError(InferenceError):
    """The model could not run (not loaded, crashed, out of context)."""


class InvalidInferenceOutputError(InferenceError):
    """The model's output did not match the required schema after ``generation_max_requests`` attempts."""


class RerankError(PcmemError):
    """A reranker returned something pcmem cannot use (a rank outside the pool), or its backend degraded."""

    exit_code = 9


class OwnerGoneError(StoreError):
    """The store's owner went away again and again while running one call for this process (a client sends a call
    again each time its owner goes away, up to 3 times), so nothing more is tried. A write may have been applied —
    once, never twice: the message names its idempotency key; the same call with that key applies it at most once
    and answers what it did. The store itself is fine."""

    exit_code = 15
