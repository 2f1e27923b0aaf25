"""The Python API reference: one mkdocstrings directive per public name (``pcmem.__all__``), grouped by the module
that defines it, so a name added to the package root appears here without editing the page. mkdocstrings renders
each from its signature and docstring."""

from __future__ import annotations

import importlib

#: A title per defining module, in the page's order; a module not named here is titled by its docstring's first line.
TITLES = {
    "pcmem.compose.runtime": "Opening a store",
    "pcmem.compose.async_runtime": "Opening a store with asyncio",
    "pcmem.memory.service": "The memory service",
    "pcmem.memory.scoped": "A scope",
    "pcmem.types.memory": "Entries, requests and results",
    "pcmem.types.search": "Search",
    "pcmem.types.context": "Context blocks and recent entries",
    "pcmem.config": "Configuration",
    "pcmem.compose.rerankers": "Rerankers",
    "pcmem.rerank.port": "Rerankers",
    "pcmem.types.rerank": "Rerankers",
    "pcmem.decision.port": "Decision models",
    "pcmem.embedding.port": "Embedders",
    "pcmem.types.embedding": "Embedders",
    "pcmem.search.reindex": "Reindexing",
    "pcmem.types.progress": "Progress",
    "pcmem.types.usage": "Usage",
    "pcmem.validation": "Filters",
    "pcmem.errors": "Errors",
}


def defining_modules() -> dict[str, str]:
    """Every public name of ``pcmem`` and the module that defines it."""
    import pcmem

    modules = dict(pcmem._LAZY)
    for name in pcmem.__all__:
        if name not in modules:
            value = getattr(pcmem, name)
            modules[name] = getattr(value, "__module__", None) or "pcmem"
    return {name: modules[name] for name in pcmem.__all__}


def reference() -> str:
    groups: dict[str, list[str]] = {}
    order = list(dict.fromkeys(TITLES.values()))
    for name, module in defining_modules().items():
        title = TITLES.get(module) or _docstring_title(module)
        if title not in order:
            order.append(title)
        groups.setdefault(title, []).append(f"{module}.{name}")
    parts = []
    for title in order:
        if title in groups:
            parts += [f"## {title}", ""] + [f"::: {path}\n" for path in groups[title]]
    return "\n".join(parts)


def _docstring_title(module: str) -> str:
    doc = importlib.import_module(module).__doc__ or module
    return doc.strip().split("\n")[0].rstrip(".")
