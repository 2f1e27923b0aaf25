"""One-time model builds: the mpnet ONNX export and quantisation, the EmbeddingGemma GGUF conversion, and
:func:`~pcmem.embedding.build.prepare.prepare_preset`, which makes any embedder preset ready in the cache.

Only ``pcmem models prepare`` (and tests, and the benchmarks) import this package: the run-time side of each model,
where its prepared files live and how they are verified and run, is in :mod:`pcmem.embedding` itself
(``mpnet_preset``, ``gemma_preset``, ``minilm``), and never imports these (an import-linter contract checks it)."""
