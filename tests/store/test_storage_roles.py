"""The storage port as roles: both engines play every one, each consumer names the narrowest it uses, and the
capabilities only some objects have are declared protocols rather than attribute probes."""

from __future__ import annotations

import inspect
import typing

import pytest
from fakes import HashEmbedder

import pcmem
from pcmem.compose.backends import open_backend
from pcmem.errors import CapabilityNotSupportedError
from pcmem.store import port
from pcmem.store.port import (
    FileMaintenance,
    Maintenance,
    RevisionLog,
    SearchIndex,
    Snapshots,
    StorageBackend,
    StoreSettings,
    VectorProfiles,
    VectorReads,
)
from pcmem.types.memory import NewEntry, RememberRequest

ROLES = (Snapshots, RevisionLog, VectorReads, VectorProfiles, SearchIndex, Maintenance, StoreSettings, StorageBackend)


@pytest.fixture(params=["duckdb", "seekdb"])
def engine(request, tmp_path):
    target = tmp_path / "m.duckdb" if request.param == "duckdb" else request.getfixturevalue("seekdb_url")
    backend = open_backend(target)
    yield request.param, backend
    backend.close()


def test_both_engines_play_every_role(engine):
    _, backend = engine
    assert [role.__name__ for role in ROLES if not isinstance(backend, role)] == []


def test_only_a_store_file_offers_check_and_repair(engine):
    from pcmem.cli.check_command import require_file_maintenance

    name, backend = engine
    assert isinstance(backend, FileMaintenance) == (name == "duckdb")
    if name == "duckdb":
        assert require_file_maintenance(backend, "pcmem check").check().ok
    else:
        with pytest.raises(CapabilityNotSupportedError, match="pcmem check works on DuckDB store files"):
            require_file_maintenance(backend, "pcmem check")


def test_the_port_is_the_composition_of_its_roles_and_nothing_else():
    def members(protocol: type) -> set[str]:
        return {name for klass in protocol.__mro__ if klass not in (typing.Protocol, typing.Generic, object)
                for name in (*vars(klass), *getattr(klass, "__annotations__", {}))
                if not name.startswith("_")}

    roles = (RevisionLog, VectorProfiles, SearchIndex, Maintenance, StoreSettings)
    assert members(StorageBackend) - {"close"} == set().union(*(members(role) for role in roles))
    # the 27 methods and the analyzer of the port before it was split, the store's default fusion (read, set), and
    # warm (a scope's search views loaded before its first search)
    assert len(members(StorageBackend)) == 31


@pytest.mark.parametrize(("function", "parameter", "role"), [
    ("pcmem.search.service:SearchService.__init__", "backend", "SearchedStore"),
    ("pcmem.search.reindex:reindex", "backend", "VectorProfiles"),
    ("pcmem.search.reindex:fill_secondary", "backend", "VectorProfiles"),
    ("pcmem.memory.paging:list_page", "backend", "RevisionLog"),
    ("pcmem.memory.paging:changes_page", "backend", "RevisionLog"),
    ("pcmem.memory.vectors:EmbedderRoles.__init__", "backend", "VectorReads"),
    ("pcmem.memory.parts:RuntimeShared.__init__", "backend", "MemoryStore"),
    ("pcmem.compose.embedders:resolve_embedder", "backend", "VectorReads"),
    ("pcmem.compose.runtime_parts:search_factory", "backend", "SearchedStore"),
])
def test_each_consumer_names_the_roles_it_uses_not_the_whole_port(function, parameter, role):
    import importlib

    module, _, qualified = function.partition(":")
    target: object = importlib.import_module(module)
    for part in qualified.split("."):
        target = getattr(target, part)
    assert inspect.signature(target).parameters[parameter].annotation == role  # a string: postponed annotations
    hint = getattr(port, role, None) or getattr(importlib.import_module(module), role)
    played = [base for base in hint.__mro__ if base in ROLES]
    assert played and StorageBackend not in played  # made of roles, narrower than the whole port


def test_an_injected_reranker_that_declares_a_second_embedder_gets_its_vectors_written(tmp_path):
    """A reranker of one's own that declares :class:`~pcmem.rerank.port.SecondEmbedderReranker` (no ``.embedder``
    attribute, which the runtime once probed for): writes keep its embedder's vectors in the secondary profile."""
    second = HashEmbedder("test/second", 32)

    class OwnReranker:
        policy_id = "test.own-second-embedder.v1"

        @property
        def second_embedder(self):
            return second

        def rerank(self, query, candidates, limit, progress=None):
            raise AssertionError("not searched here")

    path = tmp_path / "m.duckdb"
    with pcmem.open(path, embedder=HashEmbedder(), rerank_embedder="none") as runtime:
        runtime.reindex_secondary(embedder=second)
    with pcmem.open(path, embedder=HashEmbedder(), rerank_embedder="none", reranker=OwnReranker()) as runtime:
        assert runtime.rerank_embedder is second
        written = runtime.memory.for_scope("s").remember(RememberRequest(entries=[NewEntry(kind="fact", text="x")]))
        ids = [citation.entry_version_id for citation in written.citations]
        assert set(runtime.backend.stored_vectors(second.profile, ids)) == set(ids)


def test_the_port_module_declares_each_role_runtime_checkable():
    for role in (*ROLES, FileMaintenance):
        assert getattr(role, "_is_runtime_protocol", False), role
    assert {name for name in vars(port) if isinstance(vars(port)[name], type)} >= {r.__name__ for r in ROLES}
