"""The storage engines, found by a store target's URL scheme: the one table of them.

>>> engine_for("memory.duckdb").name                         # a path: the default engine, a DuckDB file
'duckdb'
>>> engine_for("seekdb:///var/lib/pcmem/seekdb").name       # doctest: +SKIP
'seekdb'

pcmem's own engines are listed in :data:`BUILT_IN` by the module that holds each engine object, imported when a
target first names it (the DuckDB engine's module imports neither DuckDB nor numpy: a client of another process's
store never loads them). Another package adds an engine by declaring an entry point in the group
:data:`ENTRY_POINT_GROUP` named after its scheme, pointing at a :class:`~pcmem.store.engine.StorageEngine` (an object,
or a class made with no arguments), as harlequin finds its adapters::

    [project.entry-points."pcmem.engines"]
    sqlite = "pcmem_sqlite:ENGINE"

Installed packages are looked through only for a scheme pcmem does not know itself, so a command on a DuckDB file or a
seekdb URL never pays for the lookup.
"""

from __future__ import annotations

import importlib
import os
import threading

from pcmem.errors import ConfigurationError, InputError, StoreSchemeError
from pcmem.settings import store_scheme
from pcmem.store.engine import StorageEngine, StoreLocation, StoreTarget

#: pcmem's engines: a URL scheme (lower case, with its colon) to ``"module:attribute"`` of the engine object.
BUILT_IN: dict[str, str] = {
    "duckdb:": "pcmem.store.duckdb.engine:ENGINE",
    "seekdb:": "pcmem.store.seekdb.engine:ENGINE",
    "oceanbase:": "pcmem.store.seekdb.engine:ENGINE",  # an OceanBase cluster speaks seekdb's protocol
}
#: The engine of a target without a scheme: a file path is a DuckDB file.
DEFAULT_SCHEME = "duckdb:"
#: The entry point group other packages register engines in (the entry point's name is the scheme, without colon).
ENTRY_POINT_GROUP = "pcmem.engines"

_loaded: dict[str, StorageEngine] = {}
_guard = threading.Lock()


def engine_for(target: StoreTarget) -> StorageEngine:
    """The engine ``target`` names: by its URL scheme, a path's is the DuckDB file. StoreSchemeError for a scheme no
    engine is registered for (listing the known ones), InputError for a ``file:`` URI (naming the plain path)."""
    if isinstance(target, StoreLocation):
        return engine_named(target.engine)
    text = _text(target)
    if not isinstance(text, str):
        return _builtin(DEFAULT_SCHEME)  # a bytes path: the file layer refuses it with its own message
    scheme = store_scheme(text)
    if scheme is None:
        if "://" in text:
            raise _unknown_scheme(text)
        return _builtin(DEFAULT_SCHEME)
    engine = _engine(scheme)
    if engine is None:
        raise _unknown_scheme(text)
    return engine


def locate(target: StoreTarget) -> StoreLocation:
    """``target`` resolved by its engine (once: a location is returned as it is). InputError for what is not a store
    target (another type, an empty string), and as :func:`engine_for` and the engine's ``locate`` refuse."""
    if isinstance(target, StoreLocation):
        return target
    return engine_for(target).locate(target)


def located(target: StoreTarget) -> tuple[StorageEngine, StoreLocation]:
    """The engine of ``target`` and ``target`` resolved by it (as :func:`locate`)."""
    location = locate(target)
    return engine_for(location), location


def engine_named(name: str) -> StorageEngine:
    """The engine called ``name`` (the one a :class:`~pcmem.store.engine.StoreLocation` came from: loaded already)."""
    with _guard:
        for engine in _loaded.values():
            if engine.name == name:
                return engine
    for scheme in (*BUILT_IN, *_entry_points()):
        found = _engine(scheme)
        if found is not None and found.name == name:
            return found
    raise InputError(f"no storage engine is called {name!r}")


def _builtin(scheme: str) -> StorageEngine:
    engine = _engine(scheme)
    assert engine is not None, scheme  # BUILT_IN lists it
    return engine


def builtin_modules() -> tuple[str, ...]:
    """The modules pcmem's own engines are declared in: imported by name when a target first names one, so a
    bundler (pcmem's PyInstaller hook) must be told to include them."""
    return tuple(sorted({_module_of(spec) for spec in BUILT_IN.values()}))


def known_schemes() -> list[str]:
    """Every scheme an engine is registered for: pcmem's own, then installed packages' (for messages)."""
    return [*BUILT_IN, *(scheme for scheme in _entry_points() if scheme not in BUILT_IN)]


def _engine(scheme: str) -> StorageEngine | None:
    """The engine registered for ``scheme``, loaded once; ``None`` when none is (the caller says so)."""
    with _guard:
        found = _loaded.get(scheme)
        if found is None:
            spec = BUILT_IN.get(scheme) or _entry_points().get(scheme)
            if spec is None:
                return None
            found = _loaded[scheme] = _load(spec, scheme)
        return found


def _module_of(spec: str) -> str:
    return spec.partition(":")[0]


def _load(spec: str, scheme: str) -> StorageEngine:
    module, attribute = _module_of(spec), spec.partition(":")[2]
    try:
        found = getattr(importlib.import_module(module), attribute)
    except (ImportError, AttributeError) as error:  # a bundle that left it out, a plugin that moved it
        raise ConfigurationError(f"the storage engine registered for {scheme!r} cannot be loaded from {spec}: "
                                 f"{error}") from None
    engine = found() if isinstance(found, type) else found
    if not isinstance(engine, StorageEngine):
        raise InputError(f"the storage engine registered for {scheme!r} ({spec}) is not a pcmem StorageEngine")
    return engine


def _entry_points() -> dict[str, str]:
    """Installed packages' engines by scheme (looked up when a scheme is not pcmem's own: importlib.metadata reads
    every installed distribution's metadata)."""
    from importlib.metadata import entry_points

    return {f"{point.name.lower()}:": point.value for point in entry_points(group=ENTRY_POINT_GROUP)}


def _text(target: StoreTarget) -> str | bytes:
    if not isinstance(target, (str, os.PathLike)):
        raise InputError(f"a store target is a path or a store URL, not {type(target).__name__}")
    text = os.fspath(target)
    if isinstance(text, str) and not text.strip():
        raise InputError("the store target is empty")
    return text


def _unknown_scheme(target: str) -> InputError:
    if store_scheme(target) == "file:":
        return InputError(f"{target!r} is a file: URI; give the plain path {_file_uri_path(target)} instead")
    colon = " (a file whose name has a colon is written ./NAME)" if "://" not in target else ""
    return StoreSchemeError(f"{target!r} is a URL of no store engine pcmem knows; known schemes: "
                            f"{', '.join(known_schemes())} (or a plain file path){colon}")


def _file_uri_path(uri: str) -> str:
    from urllib.parse import unquote, urlsplit

    parts = urlsplit(uri)
    path = unquote(parts.path)
    if parts.netloc and parts.netloc != "localhost":
        return f"//{parts.netloc}{path}"
    return path

