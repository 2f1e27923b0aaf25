"""PowerContext 1.4.1's prepared-context routes and server info, served from pcmem's context blocks
(:meth:`pcmem.SyncMemoryService.context`).

- ``/v1/context/prepare``: the entries relevant to the query (a search; the memory sections of ``assembly`` set how
  many hits, 6 by default), packed under ``max_bytes``.
- ``/v1/context/bootstrap``: at a lifecycle event, the scope's newest active entries (at most 7, 1.4.1's bound), no
  query. pcmem keeps no delivery receipts: each answer's receipt is a fresh ``pending`` (or ``skipped``) one named
  from the package, and ``/v1/context/bootstrap/receipts`` is not served.
- ``/v1/server-info``: pcmem's identity and the 1.4.1 contract it implements.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pcmem
from pcmem.serve import wire
from pcmem.serve import wire_context as w
from pcmem.serve.errors import ApiError
from pcmem.serve.operations import MemoryApi

#: The 1.4.1 feature contracts pcmem serves whole (its ``memory.explicit`` group).
FEATURE_CONTRACTS = {"memory.explicit": {"version": {"major": 1, "minor": 0},
                                         "operations": ["remember_memory", "search_memory", "get_memory_entry"]}}
API_CONTRACT = {"major": 1, "minor": 4}


def _digest(text: str) -> str:
    return f"sha256:{hashlib.sha256(text.encode('utf-8')).hexdigest()}"


async def prepare(api: MemoryApi, request: w.PrepareContextRequest) -> w.PreparedContext:
    sections = request.assembly.sections if request.assembly is not None else None
    relevant = 6 if sections is None else sum(s.limit for s in sections if s.family is w.ContextAssemblyFamily.memory)
    if relevant == 0:  # 1.4.1: an assembly without a memory section recalls no memory
        return w.PreparedContext(status="empty", content=None, content_bytes=0)
    scoped = api.scope(request.scope_id)
    block = await api.run(lambda: scoped.context(request.query, max_bytes=request.max_bytes, relevant=relevant,
                                                 recent=0), may_rerank=True)
    if not block.items:
        return w.PreparedContext(status="empty", content=None, content_bytes=0)
    return w.PreparedContext(status="ready", content=block.text, content_bytes=block.bytes)


async def bootstrap(api: MemoryApi, request: w.BootstrapContextRequest) -> w.BootstrapContext:
    if request.handoff is not None:
        raise ApiError(404, "artifact_not_found", "pcmem has no Handoff artifacts")
    if not request.enabled:
        return _not_ready(request, "skipped", "disabled", truncated=False)
    scoped = api.scope(request.scope_id)
    block = await api.run(lambda: scoped.context(None, max_bytes=request.max_bytes, relevant=0,
                                                 recent=w.MAX_BOOTSTRAP_ITEMS, explain=True))
    left_out = any(omission.reason == "budget" for omission in block.omitted)
    if not block.items:
        return _not_ready(request, "empty", "no_eligible_context", truncated=left_out)
    texts = await api.run(lambda: {item.citation.entry_id: scoped.get(item.citation).entry.text
                                   for item in block.items})
    items = [w.BootstrapContextItem(kind="atomic-memory", scope_id=item.scope, truncated=item.truncated,
                                    artifact=wire.ArtifactReference(family=wire.MEMORY_FAMILY,
                                                                    artifact_id=item.citation.entry_id,
                                                                    revision=item.version),
                                    content_digest=_digest(texts[item.citation.entry_id]))
             for item in block.items]
    package = _digest(block.text)
    return w.BootstrapContext(status="ready", reason=None, content=block.text, content_bytes=block.bytes,
                              package_digest=package, items=items,
                              truncated=left_out or any(item.truncated for item in items),
                              receipt=w.BootstrapDeliveryReceipt(receipt_id=_receipt_id(request, package),
                                                                 state="pending"))


def _not_ready(request: w.BootstrapContextRequest, status: str, reason: str, *, truncated: bool) -> w.BootstrapContext:
    return w.BootstrapContext(status=status, reason=reason, content=None, content_bytes=0, package_digest=None,
                              items=[], truncated=truncated,
                              receipt=w.BootstrapDeliveryReceipt(receipt_id=_receipt_id(request, reason),
                                                                 state="skipped"))


def _receipt_id(request: w.BootstrapContextRequest, package: str) -> str:
    """A receipt name that is the same for the same event and package (pcmem stores no receipts)."""
    event = "\x00".join([request.scope_id, request.integration, request.lifecycle, request.event_id or "", package])
    return f"rcpt_{hashlib.sha256(event.encode('utf-8')).hexdigest()[:40]}"


def server_info(api: MemoryApi) -> w.ServerInfo:
    """``server_id`` is derived from the store's resolved path: the same store, the same id, across restarts."""
    where = str(Path(api.store).expanduser().resolve()) if "://" not in api.store else api.store
    return w.ServerInfo.model_validate({
        "schema_version": {"major": 1, "minor": 0}, "product": "powercontext",
        "server_id": f"pcmem-{hashlib.sha256(where.encode('utf-8')).hexdigest()[:32]}",
        "package_version": pcmem.__version__, "api_contract_version": API_CONTRACT,
        "feature_contracts": FEATURE_CONTRACTS})
