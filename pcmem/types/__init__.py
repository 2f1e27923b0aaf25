"""The value layer: immutable values every other package exchanges, and nothing else.

``memory`` (entries, revisions, citations, requests), ``search`` (search requests, hits, candidates, modes),
``storage`` (what a backend hands the services), ``embedding`` (vector-space profiles), ``rerank`` and ``decision``
(what a reranker or a decision model returns), ``usage`` and ``progress``. These modules import only pydantic,
:mod:`pcmem.errors` and :mod:`pcmem.validation`; ports (Protocols) live with their packages.
"""
