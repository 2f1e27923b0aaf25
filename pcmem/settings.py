"""Settings, typed and read in one place: every environment variable pcmem reads is read in this module.

Precedence everywhere: explicit argument > environment variable > default. The core takes these values as plain
constructor arguments; the composition root (:mod:`pcmem.compose`), the CLI and the TUI build them from here.

- Where the store lives: ``--db`` > ``PCMEM_DB`` > the per-user default (:func:`resolve_db_path`).
- Where prepared model files live: ``PCMEM_CACHE_DIR`` > the per-user cache (:func:`cache_dir`).
- Which embedder a *new* store gets: ``PCMEM_EMBEDDER`` > the bundled default (:func:`new_store_embedder`).
- The embedding reranker's second embedder (PowerContext has no name for it): ``rerank_embedder=`` >
  ``PCMEM_RERANK_EMBEDDER`` (a preset, a model directory, or ``none``) > the store's secondary profile
  (:func:`rerank_embedder`).
- Search-time rerank policy and the local generation model, with PowerContext's names (the environment variables
  here; the validated values are :class:`pcmem.config.RuntimeConfig` and :class:`pcmem.config.InferenceConfig`)::

    export POWERCONTEXT_SERVER_INFERENCE_GENERATION_MODEL=llama-cpp:qwen2.5-coder-1.5b-instruct
    export POWERCONTEXT_SERVER_RUNTIME_MEMORY_RERANK_ENABLED=true
    export POWERCONTEXT_SERVER_RUNTIME_MEMORY_RERANK_CANDIDATE_LIMIT=30

- How a hybrid search fuses its two channels: the request's ``fusion`` > ``PCMEM_SEARCH_FUSION``
  (``RuntimeConfig``) > the store's own default (``pcmem fusion set``, kept in the store file) > ``rrf``, the
  contract's (``convex`` and ``weighted-rrf`` are non-contract). :func:`pcmem.search.fusion.choose_fusion` applies it.
- The editor ``pcmem tui`` opens an entry's text in: ``VISUAL`` > ``EDITOR``, as git finds it (:func:`editor`).
- How a store's owner and its clients meet: ``PCMEM_OWNER_TRANSPORT`` (``unix`` or ``pipe``) > the system's own
  (:func:`owner_transport`); for tests, which run the Windows transport on Linux with it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Literal, NamedTuple, get_args

from pcmem.errors import ConfigurationError, InputError

DB_ENV = "PCMEM_DB"
CACHE_ENV = "PCMEM_CACHE_DIR"
EMBEDDER_ENV = "PCMEM_EMBEDDER"
DEFAULT_DB_NAME = "memory.duckdb"


def default_db_path() -> Path:
    """The per-user store file, e.g. ``~/.local/share/pcmem/memory.duckdb`` on Linux."""
    return user_folder("data", f"give --db or {DB_ENV}") / DEFAULT_DB_NAME


def user_folder(kind: Literal["data", "cache"], instead: str) -> Path:
    """pcmem's per-user ``kind`` folder as the system names it (platformdirs). ConfigurationError, saying to set
    HOME (or what ``instead`` says), where the system cannot say: on Linux and macOS a process with neither ``$HOME`` nor an
    entry in the password database (``env -i`` under a uid a container made up); platformdirs raises RuntimeError."""
    import platformdirs  # lazy: a call given its paths never needs it

    try:
        named = platformdirs.user_data_dir if kind == "data" else platformdirs.user_cache_dir
        return Path(named("pcmem", appauthor=False)).expanduser()
    except RuntimeError:
        raise ConfigurationError(f"cannot tell where your {kind} folder is: this process has no $HOME and the "
                                 f"system knows no home for its user; set HOME (or {instead})") from None


def resolve_db_path(explicit: str | os.PathLike[str] | None = None) -> Path | str:
    """A store file path (``~`` expanded), or a URL kept as it is: its scheme names the engine that reads it (see
    :mod:`pcmem.store.engines`, which refuses a scheme no engine is registered for)."""
    chosen = explicit if explicit is not None else os.environ.get(DB_ENV)
    if chosen is not None and not str(chosen).strip():
        raise InputError(f"the store path is empty (--db or ${DB_ENV}); give a path, or unset it for the default")
    if chosen:
        text = os.fspath(chosen)
        if isinstance(text, str) and store_scheme(text) is not None:
            return text
        return expand_user(text)
    return default_db_path()


def expand_user(path: str | os.PathLike[str]) -> Path:
    """``~`` and ``~user`` expanded; an unknown user is an InputError (pathlib raises RuntimeError)."""
    try:
        return Path(path).expanduser()
    except RuntimeError:
        raise InputError(f"cannot expand {os.fspath(path)!r}: no such user's home directory") from None


def cache_dir(explicit: str | os.PathLike[str] | None = None) -> Path:
    """Where prepared model files live: an explicit path > ``PCMEM_CACHE_DIR`` > the per-user cache directory."""
    root = explicit or os.environ.get(CACHE_ENV)
    return expand_user(root) if root else user_folder("cache", CACHE_ENV)


def new_store_embedder(default: str) -> str:
    """The embedder a store without vectors adopts: ``PCMEM_EMBEDDER`` when set, else ``default``."""
    return os.environ.get(EMBEDDER_ENV, "").strip() or default


RERANK_EMBEDDER_ENV = "PCMEM_RERANK_EMBEDDER"


def rerank_embedder() -> str | None:
    """``PCMEM_RERANK_EMBEDDER``: the embedding reranker's second embedder (a preset or model directory), ``"none"``
    for none; ``None`` when unset (then the store's secondary profile decides, see :mod:`pcmem.compose.embedders`)."""
    return os.environ.get(RERANK_EMBEDDER_ENV, "").strip() or None


EDITOR_ENVS = ("VISUAL", "EDITOR")


def editor() -> str | None:
    """The user's editor command line (it may carry arguments): ``$VISUAL``, else ``$EDITOR``; ``None`` when neither
    is set."""
    return next((value for name in EDITOR_ENVS if (value := os.environ.get(name, "").strip())), None)


ENV_RERANK_ENABLED = "POWERCONTEXT_SERVER_RUNTIME_MEMORY_RERANK_ENABLED"
ENV_RERANK_CANDIDATE_LIMIT = "POWERCONTEXT_SERVER_RUNTIME_MEMORY_RERANK_CANDIDATE_LIMIT"
ENV_GENERATION_MODEL = "POWERCONTEXT_SERVER_INFERENCE_GENERATION_MODEL"
ENV_GENERATION_TIMEOUT = "POWERCONTEXT_SERVER_INFERENCE_GENERATION_TIMEOUT_SECONDS"
ENV_GENERATION_MAX_REQUESTS = "POWERCONTEXT_SERVER_INFERENCE_GENERATION_MAX_REQUESTS"
ENV_INFERENCE_THREADS = "PCMEM_INFERENCE_THREADS"
ENV_SEARCH_FUSION = "PCMEM_SEARCH_FUSION"
#: The variable each field of :class:`pcmem.config.RuntimeConfig` and :class:`pcmem.config.InferenceConfig` is read
#: from; :data:`CONFIG_ENVS`: all of them (a ``pcmem search`` answered by the owner runs only when none is set).
RUNTIME_CONFIG_ENVS = {
    "memory_rerank_enabled": ENV_RERANK_ENABLED,
    "memory_rerank_candidate_limit": ENV_RERANK_CANDIDATE_LIMIT,
    "memory_search_fusion": ENV_SEARCH_FUSION,
}
INFERENCE_CONFIG_ENVS = {
    "generation_model": ENV_GENERATION_MODEL,
    "generation_timeout_seconds": ENV_GENERATION_TIMEOUT,
    "generation_max_requests": ENV_GENERATION_MAX_REQUESTS,
    "threads": ENV_INFERENCE_THREADS,
}
CONFIG_ENVS: tuple[str, ...] = (*RUNTIME_CONFIG_ENVS.values(), *INFERENCE_CONFIG_ENVS.values())


def config_values(names: Mapping[str, str], environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The fields of ``names`` (field → variable) whose variable is set in ``environ`` (default: the process's),
    as raw text: :mod:`pcmem.config`'s models validate them."""
    source = os.environ if environ is None else environ
    return {field: source[name] for field, name in names.items() if name in source}


def runtime_configured() -> bool:
    """Whether any variable of :data:`CONFIG_ENVS` is set (a ``pcmem search`` or ``show`` then takes the full path,
    where the models validate and apply them)."""
    return any(name in os.environ for name in CONFIG_ENVS)

#: How a search fuses its channels: ``rrf`` is the contract's equal-weight RRF; ``convex`` and
#: ``weighted-rrf`` are non-contract options for more recall (see :mod:`pcmem.search.fusion`).
SearchFusion = Literal["rrf", "convex", "weighted-rrf"]
SEARCH_FUSIONS: tuple[SearchFusion, ...] = get_args(SearchFusion)
#: Where a search's fusion came from, in precedence order: the request, the runtime (``PCMEM_SEARCH_FUSION``), the
#: store's default (kept in the store file), else the contract's ``rrf``.
FusionSource = Literal["request", "runtime", "store", "contract"]

#: A URI scheme at the start of a target: a letter, then letters, digits, ``+ - .``, then ``:`` — two characters at
#: least, so a Windows drive (``C:\\``) stays a path. Its engine is found by it (:mod:`pcmem.store.engines`).
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]+:")


def store_scheme(target: str) -> str | None:
    """The URL scheme ``target`` starts with, lower case with its colon (``"seekdb:"``), or ``None`` for a path."""
    scheme = _SCHEME.match(target)
    return scheme.group().lower() if scheme is not None else None


LOCK_TIMEOUT_ENV = "PCMEM_LOCK_TIMEOUT"
DEFAULT_LOCK_TIMEOUT = 10.0


def lock_timeout() -> float:
    """Seconds the CLI waits for a store file another process holds (``$PCMEM_LOCK_TIMEOUT``, default 10)."""
    raw = os.environ.get(LOCK_TIMEOUT_ENV, "").strip()
    if not raw:
        return DEFAULT_LOCK_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        raise ConfigurationError(f"${LOCK_TIMEOUT_ENV} must be a number of seconds, got {raw!r}") from None
    if not 0 <= value <= 3600:
        raise ConfigurationError(f"${LOCK_TIMEOUT_ENV} must be between 0 and 3600 seconds, got {raw!r}")
    return value


OWNER_TRANSPORT_ENV = "PCMEM_OWNER_TRANSPORT"
OwnerTransport = Literal["unix", "pipe"]


def owner_transport() -> OwnerTransport | None:
    """The owner transport ``$PCMEM_OWNER_TRANSPORT`` names (``unix``: a Unix socket, Linux's and macOS's; ``pipe``:
    multiprocessing's authenticated listener, Windows' named pipe and a Unix socket elsewhere), ``None`` when unset
    (the system's own: :func:`pcmem.owner.transport.current`). For tests: processes of one store must all use the
    same, or they do not find each other."""
    raw = os.environ.get(OWNER_TRANSPORT_ENV, "").strip().lower()
    if not raw:
        return None
    if raw not in get_args(OwnerTransport):
        raise ConfigurationError(f"${OWNER_TRANSPORT_ENV} must be one of {', '.join(get_args(OwnerTransport))}, "
                                 f"got {raw!r}")
    return raw  # type: ignore[return-value]


RUNTIME_DIR_ENV = "XDG_RUNTIME_DIR"


def runtime_dir() -> Path | None:
    """The per-user runtime folder the system offers (``$XDG_RUNTIME_DIR``), ``None`` when unset. Owners no longer
    listen there (the place must not depend on the environment: :mod:`pcmem.owner.address`); a client looks there
    only to name an older pcmem that holds a store."""
    raw = os.environ.get(RUNTIME_DIR_ENV, "").strip()
    return Path(raw) if raw else None


#: pydantic's switch for its plugin discovery (see :func:`skip_pydantic_plugin_discovery`).
PYDANTIC_PLUGINS_ENV = "PYDANTIC_DISABLE_PLUGINS"


def skip_pydantic_plugin_discovery() -> None:
    """For the CLI only. The first pydantic validator a process builds makes pydantic import ``importlib.metadata``
    and read the entry points of every installed distribution, looking for plugins (observability hooks, e.g.
    logfire), a cost that grows with the installed distributions, for hooks a CLI call never reports to.
    The CLI turns it off unless the user set the variable; ``PYDANTIC_DISABLE_PLUGINS=`` (empty) loads every plugin
    again. The library itself never changes the environment: an application's plugins work as it configured them."""
    os.environ.setdefault(PYDANTIC_PLUGINS_ENV, "__all__")


#: How llama.cpp's OpenMP threads wait between the steps of one forward pass. The default (spinning) makes each idle
#: thread burn a core, so on a machine where anything else runs the threads preempt the one doing the work (an
#: EmbeddingGemma passage took an order of magnitude longer on a loaded 2-core machine). Passive
#: threads sleep instead. libgomp reads it once, when llama.cpp's library loads: a value the user set wins.
OMP_WAIT_POLICY_ENV = "OMP_WAIT_POLICY"
OMP_WAIT_POLICY = "PASSIVE"


def wait_passively_in_openmp() -> str:
    """Before llama.cpp loads: its OpenMP threads sleep while they wait (:data:`OMP_WAIT_POLICY`) unless the user
    chose otherwise. Returns the policy llama.cpp will load with."""
    return os.environ.setdefault(OMP_WAIT_POLICY_ENV, OMP_WAIT_POLICY)


def openmp_wait_policy() -> str | None:
    """The OpenMP wait policy in this process's environment (what a loaded llama.cpp read), if any."""
    return os.environ.get(OMP_WAIT_POLICY_ENV)


#: Where the MCP hosts ``pcmem mcp install`` knows keep their configuration, by their own conventions: the XDG config
#: folder (Claude Desktop and VS Code on Linux), Windows' APPDATA, Codex's CODEX_HOME. pcmem only reads them.
HOST_CONFIG_ENVS = ("XDG_CONFIG_HOME", "APPDATA", "CODEX_HOME")


def host_config_environment() -> dict[str, str]:
    """The :data:`HOST_CONFIG_ENVS` that are set (and not blank)."""
    return {name: value for name in HOST_CONFIG_ENVS if (value := os.environ.get(name, "").strip())}


# --- every variable, declared once ------------------------------------------------------------------------------------


class Variable(NamedTuple):
    """An environment variable pcmem reads: its name, what an unset one means, and what it sets."""

    name: str
    default: str
    meaning: str


#: Every environment variable pcmem reads, in one table (the configuration reference of the documentation is generated
#: from it, and tests/docs/test_docs_reference.py checks that every variable the code reads is here). The variables of
#: :class:`pcmem.config.RuntimeConfig` and :class:`pcmem.config.InferenceConfig` (:data:`CONFIG_ENVS`) take their
#: defaults and bounds from those models. The variables pcmem *sets* to stay offline are :mod:`pcmem.offline`'s.
ENVIRONMENT: tuple[Variable, ...] = (
    Variable(DB_ENV, "the per-user store (`pcmem where`)",
             "The store: a file path, `duckdb:PATH`, or a `seekdb:`/`oceanbase:` URL. `--db` wins over it."),
    Variable(CACHE_ENV, "the per-user cache folder",
             "Where prepared model files live (the assembled MiniLM files, built mpnet and EmbeddingGemma models)."),
    Variable(EMBEDDER_ENV, "`minilm-l6-int8`",
             "The embedder a *new* store adopts (a preset, an ONNX model folder or `fastembed:MODEL`); a store keeps "
             "the one its vectors were made with."),
    Variable(RERANK_EMBEDDER_ENV, "the store's secondary profile",
             "The embedding reranker's second embedder (a preset or model folder), `none` for none."),
    Variable(ENV_RERANK_ENABLED, "", "Rerank every search with the generation model (PowerContext's name)."),
    Variable(ENV_RERANK_CANDIDATE_LIMIT, "", "How many coarse candidates a reranker sees (PowerContext's name)."),
    Variable(ENV_SEARCH_FUSION, "the store's default, else `rrf`",
             "How a search that does not choose fuses its channels: `rrf`, `weighted-rrf` or `convex`."),
    Variable(ENV_GENERATION_MODEL, "",
             "The local generation model, `llama-cpp:<preset or path.gguf>` (a path may end in `#sha256=<hex>`)."),
    Variable(ENV_GENERATION_TIMEOUT, "", "Seconds one generation request may take; past it the search fails closed."),
    Variable(ENV_GENERATION_MAX_REQUESTS, "", "Attempts per operation when the output does not match the schema."),
    Variable(ENV_INFERENCE_THREADS, "every core", "llama.cpp threads of the generation model (pcmem's own name)."),
    Variable(LOCK_TIMEOUT_ENV, f"`{DEFAULT_LOCK_TIMEOUT:g}`",
             "Seconds the CLI waits for a store file held by a process that does not serve it (0..3600)."),
    Variable(EDITOR_ENVS[0], "`$EDITOR`", "The editor `pcmem tui` opens an entry's text in (`o`)."),
    Variable(EDITOR_ENVS[1], "none", "The editor, when `$VISUAL` is not set."),
    Variable(RUNTIME_DIR_ENV, "unset",
             "Not where owners listen (that never depends on the environment); a client looks there only to name an "
             "older pcmem holding a store."),
    Variable(OWNER_TRANSPORT_ENV, "the system's own",
             "How processes of one store meet: `unix` (a Unix socket) or `pipe` (Windows' key-checked pipe, a Unix "
             "socket beneath it elsewhere). For tests; every process of a store must use the same."),
    Variable(PYDANTIC_PLUGINS_ENV, "`__all__` in the CLI",
             "The CLI skips pydantic's plugin discovery unless it is set; empty loads every plugin."),
    Variable(OMP_WAIT_POLICY_ENV, f"`{OMP_WAIT_POLICY}` when llama.cpp loads",
             "How llama.cpp's OpenMP threads wait between steps; a value you set wins."),
    *(Variable(name, "unset", "Where an MCP host keeps its configuration (`pcmem mcp install` reads it).")
      for name in HOST_CONFIG_ENVS),
)
