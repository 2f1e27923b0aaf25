"""What an embedder preset declares: one object that carries everything pcmem does with one local model.

A model family (MiniLM, mpnet, EmbeddingGemma) is a subclass that says where its files live, how they are verified
and how an embedder runs them; a preset is an instance of it with its own name, profile, description, batch size,
reference vectors and fusion parameters. :mod:`pcmem.embedding.presets` registers the instances; every reader
(``--embedder``, ``pcmem models``, ``pcmem models prepare``, ``pcmem doctor``, the search's fusion) asks them.

Preparing a model (an export, a conversion) is heavy build code that nothing at run time may import: a preset names
its build as ``"module:function"`` (:attr:`EmbedderPreset.build`), imported only by ``pcmem models prepare``.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pcmem.embedding.port import Embedder
from pcmem.errors import ConfigurationError
from pcmem.types.embedding import EmbeddingProfile
from pcmem.types.fusion import FusionDefaults
from pcmem.types.progress import StageProgress


@dataclass(frozen=True)
class PrepareOptions:
    """What ``pcmem models prepare`` passes a build besides the cache: where the user put the transport files, and
    whether they accepted the model's terms. ``notify`` shows the user a message (a licence notice) on stderr."""

    wheel_dir: Path | None = None
    sdist: Path | None = None
    accept_terms: bool = False
    notify: Callable[[str], None] = field(default=lambda message: None)


@dataclass(frozen=True, kw_only=True)
class EmbedderPreset(ABC):
    """One embedder preset. Subclasses implement :meth:`model_dir`, :meth:`is_ready` and :meth:`embedder` (and
    :meth:`prepare` when they have nothing to build); the rest has defaults."""

    name: str
    #: The vector space its vectors are in (a store records it; vectors of different profiles never mix).
    profile: EmbeddingProfile
    #: One line for ``pcmem models``.
    description: str
    #: The command that makes it ready, shown where it is not (``pcmem models``, errors, ``pcmem doctor``).
    prepare_hint: str
    #: Texts per inference call: >1 only where batching provably does not change a text's vector.
    batch_size: int
    #: Stored vectors of the reference texts (pcmem/embedding/data/) for a model whose bytes are pinned: what its
    #: runtime must keep computing (tests/embedding/test_reference_vectors.py). None where the bytes depend on a local build.
    reference_vectors: str | None = None
    #: The non-contract fusions' parameters measured for its vectors (the shared values where it says ``None``).
    fusion: FusionDefaults = FusionDefaults()
    #: No longer offered (nor built): kept so that a store whose vectors it made still finds its model.
    retired: bool = False
    #: ``"module:function"`` that prepares it, called as ``function(preset, cache_root, progress, options)`` and
    #: returning its model directory; imported only when ``pcmem models prepare`` runs.
    build: str | None = None

    @abstractmethod
    def model_dir(self, cache_root: Path) -> Path:
        """Where its prepared files live under pcmem's cache."""

    @abstractmethod
    def is_ready(self, cache_root: Path) -> bool:
        """Whether its files are there and verified (may hash hundreds of MB; nothing is loaded)."""

    def looks_prepared(self, cache_root: Path) -> bool:
        """Whether it was prepared here, cheaply enough for every open (no hashing: loading verifies the files and
        reports a damaged cache)."""
        return self.is_ready(cache_root)

    @abstractmethod
    def embedder(self, cache_root: Path) -> Embedder:
        """A new embedder; its model loads (and is verified) on first use, so building one is cheap."""

    def prepare(self, cache_root: Path, progress: StageProgress | None, options: PrepareOptions) -> Path:
        """Make it ready in the cache (idempotent) and return its model directory: runs :attr:`build` (without one,
        only checks that it is ready)."""
        if self.build is None:
            if self.is_ready(cache_root):
                return self.model_dir(cache_root)
            raise ConfigurationError(f"the embedder {self.name} is not ready and pcmem has no build for it: "
                                     f"{self.prepare_hint}")
        module, _, function = self.build.partition(":")
        prepared: Path = getattr(importlib.import_module(module), function)(self, cache_root, progress, options)
        return prepared

    def source_problems(self) -> list[str]:
        """What is wrong with the files it is made from where pcmem installs them (``pcmem doctor``); each says what
        to do. Empty when there is nothing to check."""
        return []

    def damaged_copies(self, cache_root: Path) -> list[Path]:
        """Its files in the cache that exist but fail verification, when the next use replaces them by itself."""
        return []
