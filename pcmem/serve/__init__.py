"""``pcmem serve`` and ``pcmem mcp``: one long-lived process that keeps the store open and the models warm.

- :mod:`pcmem.serve.wire`: PowerContext's HTTP v1 Memory models; :mod:`pcmem.serve.convert`: to and from pcmem's;
  :mod:`pcmem.serve.wire_context` and :mod:`pcmem.serve.context_ops`: 1.4.1's prepared context and server info.
- :mod:`pcmem.serve.operations`: the operations both transports serve, off the event loop.
- :mod:`pcmem.serve.tools`: the agent tools, each one declaration (:mod:`pcmem.serve.tool_declaration`) with its
  arguments and what it does; their compact schemas: :mod:`pcmem.serve.tool_schema`.
- :mod:`pcmem.serve.app`: the HTTP app (v1, ``/x/pcmem``, the tools at ``/x/pcmem/tools``, ``/mcp``);
  :mod:`pcmem.serve.mcp_tools`: the tools on the MCP SDK.
- :mod:`pcmem.serve.errors`: pcmem errors → PowerContext codes, statuses and agent advice.
- :mod:`pcmem.serve.shutdown`: SIGTERM/SIGHUP close the store and exit 0; :mod:`pcmem.serve.http_server` (uvicorn)
  and :mod:`pcmem.serve.stdio` (``pcmem mcp``) stop through it.

Needs the ``serve`` extra (FastAPI, uvicorn, the MCP SDK): ``pip install 'pcmem[serve]'``. Importing this package
does not import them; :func:`require_serve` says what to install when they are missing.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from pcmem.errors import ConfigurationError

EXTRA_HINT = "pip install 'pcmem[serve]'"


def require_serve() -> None:
    """Raise ConfigurationError naming the extra when FastAPI, uvicorn or the MCP SDK is missing."""
    missing = [name for name in ("fastapi", "uvicorn", "mcp") if importlib.util.find_spec(name) is None]
    if missing:
        raise ConfigurationError(f"`pcmem serve` and `pcmem mcp` need {', '.join(missing)}: {EXTRA_HINT}")


def open_for_serving(path: str | Path, *, embedder: str | None = None, model: str | None = None,
                     rerank: str | None = None, **options: Any):  # noqa: ANN201 - pcmem.SyncRuntime
    """Open the store once for a server and warm its models, so the first request is as fast as the rest.

    ``model`` (``provider:name``) with ``rerank`` (``listwise`` by default when a model is given; ``decision`` or
    ``none``) reranks every search; ``rerank="embedding"`` needs no model (cosine under ``$PCMEM_RERANK_EMBEDDER``, else
    the store's secondary profile, else the store's own embedder); PowerContext's rerank environment variables apply
    otherwise.
    """
    import pcmem

    inference = pcmem.InferenceConfig.from_env(generation_model=model)
    policy = rerank or ("listwise" if model else None)
    config = pcmem.RuntimeConfig.from_env(memory_rerank_enabled=False if policy == "none" else None)
    if policy and policy != "none":
        config = config.model_copy(update={"memory_rerank_enabled": False})  # the reranker below applies instead
    runtime = pcmem.open(path, embedder=embedder or "auto", inference=inference, config=config, **options)
    try:
        if policy and policy != "none":
            # In the owner the model loads now; beside another owner it is only named, and that process runs it.
            runtime.use_reranker(runtime.build_reranker(policy, inference))
        if runtime.embedder is not None:
            runtime.embedder.embed_query("warm up")  # load the embedding model now, not on the first search
        runtime.prepare_takeover()  # beside another owner: load what taking the store over needs, in the background
    except BaseException:  # Ctrl-C during the warm-up too: the opened store must be closed
        runtime.close()
        raise
    return runtime
