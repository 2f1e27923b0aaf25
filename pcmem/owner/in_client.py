"""What a client of another process's owner runs in its own process: the objects its app gave it.

A reranker object (``pcmem.open(reranker=...)``, ``use_reranker``, ``search(reranker=...)``) and a write gate's
decision model live in this process and cannot cross a socket, so they run here, on what the owner returns:

- **a search** with such a reranker asks the owner for the coarse pool (the pool the owner's own reranker would see:
  :class:`pcmem.compose.owned.CandidatePool`) and orders it here with :func:`pcmem.search.service.rerank_page`, the
  step the owner would run — same pool, same checks, same trace;
- **a remember** under a write gate asks the owner's coarse search about each new entry, lets the gate decide here
  (:meth:`pcmem.memory.write_gate.WriteGate.duplicates`), and sends only the entries that are not duplicates.

pcmem's own rerankers that read the store's vectors (the embedding policy) cannot run here; they are named instead
and the owner runs them (``named``, given by the composition root).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from pcmem.errors import ConfigurationError
from pcmem.memory import arguments
from pcmem.memory import write_rules as rules
from pcmem.owner.operations import operation
from pcmem.owner.rerank_spec import CANDIDATES, RerankChoice, RerankSpec
from pcmem.rerank.choice import DEFAULT, reranker_choice
from pcmem.rerank.port import StoreBoundReranker
from pcmem.types.memory import RememberRequest, WriteResult
from pcmem.types.search import SearchMemoryRequest, SearchPage

if TYPE_CHECKING:
    from pcmem.memory.write_gate import WriteGate
    from pcmem.rerank.port import MemoryReranker



@functools.cache
def candidate_pool() -> RerankChoice:
    """What a client sends to get the coarse pool for a reranker of its own (built on first use: a model instance
    made at import would build pydantic's validators in every cold command)."""
    return RerankChoice(RerankSpec(policy=CANDIDATES))

_SEARCH_FIELDS = ("limit", "mode", "kinds", "metadata", "created_from", "created_before", "fusion")


class Calls(Protocol):
    """How requests reach the owner (:class:`pcmem.owner.client.Caller`)."""

    default_rerank: Any

    def call(self, key: str, scope: str | None, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any: ...


class LocalParts:
    """What a client runtime's Memory objects share besides the owner: its write gate, and how it names a reranker
    that reads the store's vectors (see the module docstring)."""

    def __init__(self, named: Callable[[MemoryReranker], MemoryReranker] | None = None) -> None:
        self.gate: WriteGate | None = None
        self.named = named or _cannot_name


def _cannot_name(reranker: MemoryReranker) -> MemoryReranker:
    raise ConfigurationError(f"the reranker {reranker.policy_id} reads the store's vectors, which only the process "
                             "that holds the store can read: name it with runtime.build_reranker(policy) instead")


def search(caller: Calls, local: LocalParts, key: str, scope: str | None, args: tuple[Any, ...],
           kwargs: dict[str, Any]) -> SearchPage:
    """``search`` of a client scope or service: by the owner, or reranked here (see the module docstring)."""
    kwargs = dict(kwargs)
    choice = reranker_choice(kwargs.pop("reranker", DEFAULT))
    chosen = caller.default_rerank if choice == DEFAULT else choice
    if isinstance(chosen, StoreBoundReranker):
        chosen = local.named(chosen)  # type: ignore[arg-type]  # a StoreBoundReranker is a MemoryReranker too
    if chosen is None or isinstance(chosen, (str, RerankChoice)):
        return caller.call(key, scope, args, {**kwargs, "reranker": choice if chosen is None else chosen})
    progress = kwargs.pop("progress", None)
    bound = operation(key).signature.bind(*args, **kwargs)
    request = arguments.search_request(bound.arguments.pop("request"),
                                       {name: bound.arguments.get(name) for name in _SEARCH_FIELDS})
    rest = {"scopes": bound.arguments["scopes"]} if "scopes" in bound.arguments else {}
    page: SearchPage = caller.call(key, scope, (request,), {**rest, "reranker": candidate_pool()})
    if page.rerank is None or not page.hits:
        return page
    from pcmem.search.service import rerank_page  # numpy-free, but not needed by a client without its own reranker

    pool = page.model_copy(update={"hits": page.rerank.candidates, "rerank": None})
    return rerank_page(pool, request, chosen, progress)


def remember(caller: Calls, local: LocalParts, scope: str, args: tuple[Any, ...],
             kwargs: dict[str, Any]) -> WriteResult:
    """``remember`` of a client scope: under the client's write gate when it has one (see the module docstring)."""
    gate = local.gate
    if gate is None:
        return caller.call("scope.remember", scope, args, kwargs)
    bound = operation("scope.remember").signature.bind(*args, **kwargs)
    bound.apply_defaults()
    given = bound.arguments
    request = arguments.remember_request(
        given["request"], entry={"kind": given["kind"], "metadata": given["metadata"], "entry_id": given["entry_id"]},
        upsert=given["upsert"], allow_duplicates=given["allow_duplicates"],
        options={"expected_revision": given["expected_revision"], "reason": given["reason"]})
    head = caller.call("scope.head", scope, (), {})
    if request.expected_revision is not None:
        rules.check_head(head, request.expected_revision)  # fail fast, before spending model decisions
    if head is None or request.allow_duplicates:
        return caller.call("scope.remember", scope, (request,), {})

    def coarse(query: SearchMemoryRequest) -> SearchPage:
        page: SearchPage = caller.call("scope.search", scope, (query,), {"reranker": "none"})
        return page

    duplicates = gate.duplicates(request, coarse)
    skipped = {duplicate.index for duplicate in duplicates}
    entries = tuple(entry for index, entry in enumerate(request.entries) if index not in skipped)
    if not entries:
        return WriteResult(memory=head, citations=(), duplicates=duplicates)
    written: WriteResult = caller.call("scope.remember", scope,
                                       (RememberRequest.model_validate({**request.model_dump(), "entries": entries}),),
                                       {})
    return written.model_copy(update={"duplicates": duplicates}) if duplicates else written
