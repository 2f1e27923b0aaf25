"""The composition root: the one place where settings become objects and parts are wired together.

- :mod:`~pcmem.compose.runtime`: ``open`` — a store, an embedder, a reranker, a write gate; the client runtime of a
  store another process owns. :mod:`~pcmem.compose.async_runtime`: ``open_async``, the same awaited.
- :mod:`~pcmem.compose.owned`: whether this process owns a single-file store (and serves it to other processes) or
  is a client of the process that does (see :mod:`pcmem.owner`).
- :mod:`~pcmem.compose.backends`: a store target (a file path or a store URL) to a storage backend, through the
  engine its scheme names (:mod:`pcmem.store.engines`: nothing here imports an engine).
- :mod:`~pcmem.compose.embedders`: an embedder choice (``"auto"``, a preset, a directory) to an embedder.
- :mod:`~pcmem.compose.rerankers`: a rerank policy on the configured local model to a reranker.
- :mod:`~pcmem.compose.decisions`: decision backends bound to their consumer roles.
- :mod:`~pcmem.compose.models`: the local generation model, loaded once per process and shared by those roles.

Settings are read by :mod:`pcmem.settings`; nothing below this package builds its own collaborators.
"""
