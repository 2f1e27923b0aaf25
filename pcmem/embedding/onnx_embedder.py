"""Sentence embeddings from ONNX models: one class for every preset, local directory and catalogue model.

pcmem's own model directories (the presets) run on onnxruntime and tokenizers directly (:class:`SentenceSession`):
importing fastembed would dominate a cold CLI call (it pulls huggingface_hub and its image code) and the session is all
a query needs. The session does exactly what fastembed 0.9 does for them — same tokenizer settings, session options,
mean pooling and normalisation, in the same dtypes — so the vectors are bit-identical (tests/embedding/test_onnx_session.py checks
it against fastembed). Local directories and ``fastembed:MODEL`` catalogue models still go through fastembed.

The model loads on the first embed call (so building an embedder, or importing pcmem, stays cheap) and texts are
batched by similar length. Local directories (:meth:`OnnxEmbedder.from_directory`) never download anything.

Batch independence: a text's vector must not depend on the texts it happens to be embedded with. fp32 models (and
the MiniLM int8 export, whose activations are quantised per row) give identical vectors alone or batched. Dynamic
int8 models quantise activations per *tensor*, so batch neighbours change each other's vectors (cos ≈ 0.94 seen for
mpnet); those run with ``batch_size=1`` — which is also faster for them here, as no padding is computed.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pcmem.errors import ConfigurationError, EmbeddingError, PcmemError
from pcmem.native_calls import native_call
from pcmem.types.embedding import EmbeddingProfile
from pcmem.types.progress import Progress

if TYPE_CHECKING:
    import numpy as np

Pooling = Literal["mean", "cls"]

_load_lock = threading.Lock()  # guards model loading and fastembed's process-global model registry


def fastembed_missing() -> ConfigurationError:
    """The error for a missing fastembed: in an app frozen by PyInstaller, pcmem's hook left it out on purpose
    (pcmem/pyinstaller), and pip is not the fix."""
    if getattr(sys, "frozen", False):
        return ConfigurationError("fastembed is not in this frozen app (pcmem's PyInstaller hook leaves it out): "
                                  "build the app with --hidden-import fastembed to embed with a local model folder "
                                  "or a fastembed catalogue model")
    return ConfigurationError("fastembed is not installed: pip install 'fastembed>=0.9.1,<0.10'")


def open_fastembed(model_dir: Path, *, name: str, hf_source: str, dimension: int,
                   pooling: Pooling = "mean", threads: int = 1) -> Any:
    """Register ``model_dir``'s ``model.onnx`` with fastembed under ``name`` (once per process) and open a session."""
    try:
        from fastembed import TextEmbedding
        from fastembed.common.model_description import ModelSource, PoolingType
    except ImportError as exc:
        raise fastembed_missing() from exc
    try:
        with _load_lock:
            known = {m["model"].lower() for m in TextEmbedding.list_supported_models()}
            if name.lower() not in known:
                TextEmbedding.add_custom_model(
                    model=name, pooling=PoolingType.MEAN if pooling == "mean" else PoolingType.CLS,
                    normalization=True, sources=ModelSource(hf=hf_source), dim=dimension, model_file="model.onnx")
        # cache_dir is passed only so fastembed does not create its default folder in the temp dir.
        return TextEmbedding(name, cache_dir=str(model_dir), specific_model_path=str(model_dir),
                             local_files_only=True, threads=threads)
    except Exception as exc:
        raise EmbeddingError(f"cannot load the embedding model from {model_dir}: {exc}") from exc


class SentenceSession:
    """A sentence-transformer directory (``model.onnx``, ``tokenizer.json``, ``tokenizer_config.json``, optionally
    ``config.json`` and ``special_tokens_map.json``) on onnxruntime and tokenizers, without fastembed.

    Replicates fastembed 0.9.1's ``CustomTextEmbedding`` (``load_tokenizer``, ``OnnxModel._load_onnx_model``,
    ``OnnxTextModel.onnx_embed``, ``mean_pooling``, ``normalize``) for the models pcmem prepares; ``embed`` has
    fastembed's ``TextEmbedding.embed`` signature, so :class:`OnnxEmbedder` batches both alike.
    """

    def __init__(self, model_dir: Path, *, pooling: Pooling = "mean", threads: int = 1) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        # fastembed's options: full graph optimisation (a lower level is ~4x faster to load but changes the vectors
        # by up to 2e-4 per dimension), `threads` for both pools.
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = threads
        self._session = ort.InferenceSession(str(model_dir / "model.onnx"), sess_options=options,
                                             providers=["CPUExecutionProvider"])
        self._inputs = {node.name for node in self._session.get_inputs()}
        self._tokenizer = _load_tokenizer(model_dir)
        self._pooling = pooling

    def embed(self, texts: Sequence[str], batch_size: int) -> Iterator[np.ndarray]:
        for start in range(0, len(texts), batch_size):
            yield from self._embed_batch(list(texts[start:start + batch_size]))

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        import numpy as np

        encoded = self._tokenizer.encode_batch(texts)
        input_ids = np.array([e.ids for e in encoded], dtype=np.int64)
        attention_mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        feed = {"input_ids": input_ids}
        if "attention_mask" in self._inputs:
            feed["attention_mask"] = attention_mask
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(input_ids)
        output = self._session.run(None, feed)[0]
        if self._pooling == "cls":
            pooled = output[:, 0]
        else:  # mean over real tokens, summed in float64
            summed = np.sum(output, axis=1, where=attention_mask[:, :, np.newaxis].astype(bool), dtype=np.float64)
            pooled = summed / np.maximum(np.sum(attention_mask, axis=1, keepdims=True), 1e-9)
        unit = pooled / np.maximum(np.linalg.norm(pooled, ord=2, axis=1, keepdims=True), 1e-12)
        return unit.astype(output.dtype, copy=False) if np.issubdtype(output.dtype, np.floating) else unit


def _max_length(config: dict[str, Any]) -> int:
    """The truncation limit: the stricter of ``model_max_length`` and ``max_length`` that is a real limit."""
    valid = [value for value in (config.get("model_max_length"), config.get("max_length"))
             if isinstance(value, int) and not isinstance(value, bool) and 0 < value <= sys.maxsize]
    if not valid:
        raise ValueError("tokenizer_config.json sets no positive model_max_length or max_length")
    return min(valid)


def _read_json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text()) if path.is_file() else {}


def _load_tokenizer(model_dir: Path) -> Any:
    """``tokenizer.json`` with fastembed's truncation, special tokens and batch-longest padding."""
    from tokenizers import AddedToken, Tokenizer

    if not (model_dir / "tokenizer_config.json").is_file():
        raise ValueError(f"no tokenizer_config.json in {model_dir}")
    config = _read_json(model_dir / "config.json")
    tokenizer_config = _read_json(model_dir / "tokenizer_config.json")
    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    truncation = tokenizer.truncation or {}
    tokenizer.enable_truncation(max_length=_max_length(tokenizer_config),
                                direction=tokenizer_config.get("truncation_side") or truncation.get("direction", "right"))
    for values in _read_json(model_dir / "special_tokens_map.json").values():
        for token in values if isinstance(values, list) else [values]:
            if isinstance(token, str):
                tokenizer.add_special_tokens([token])
            elif isinstance(token, dict):
                tokenizer.add_special_tokens([AddedToken(**token)])
    padding = tokenizer.padding or {}
    pad_token = padding.get("pad_token") or tokenizer_config.get("pad_token")
    if pad_token is None:
        raise ValueError(f"no pad token for {model_dir}")
    pad_id = padding.get("pad_id", config.get("pad_token_id"))
    if pad_id is None:
        pad_id = tokenizer.token_to_id(pad_token)
    if pad_id is None:
        raise ValueError(f"no id for the pad token {pad_token!r} in {model_dir}")
    tokenizer.enable_padding(direction=tokenizer_config.get("padding_side") or padding.get("direction", "right"),
                             pad_id=pad_id, pad_type_id=padding.get("pad_type_id", 0), pad_token=pad_token,
                             pad_to_multiple_of=padding.get("pad_to_multiple_of"), length=None)
    return tokenizer


def open_session(model_dir: Path, *, pooling: Pooling = "mean", threads: int = 1) -> SentenceSession:
    """A :class:`SentenceSession` on ``model_dir``, or EmbeddingError saying why it cannot load."""
    try:
        return SentenceSession(model_dir, pooling=pooling, threads=threads)
    except ImportError as exc:
        raise ConfigurationError(f"onnxruntime and tokenizers are needed to embed: {exc}") from exc
    except Exception as exc:
        raise EmbeddingError(f"cannot load the embedding model from {model_dir}: {exc}") from exc


class OnnxEmbedder:
    """Vectors of ``profile.dimension`` from a model that ``load`` opens on first use.

    ``load`` returns a :class:`SentenceSession` or a fastembed ``TextEmbedding`` (or raises a typed pcmem error);
    ``normalize`` rescales rows to unit length, for models that do not (pcmem's own models normalise).
    """

    def __init__(self, profile: EmbeddingProfile, load: Callable[[], Any], *, batch_size: int = 16,
                 normalize: bool = False) -> None:
        self._profile = profile
        self._load = load
        self.batch_size = batch_size
        self._normalize = normalize
        self._model: Any = None
        self._lock = threading.Lock()
        from pcmem.embedding.vector_lru import query_memo  # lazy: it loads numpy, which only embedding needs

        self._queries = query_memo()

    @classmethod
    def from_prepared_directory(cls, profile: EmbeddingProfile, model_dir: Callable[[], Path], *,
                                batch_size: int = 16, pooling: Pooling = "mean") -> OnnxEmbedder:
        """A model directory pcmem prepared and verified (a preset), run as a :class:`SentenceSession`;
        ``model_dir`` returns it verified, or raises ConfigurationError/EmbeddingError."""
        return cls(profile, lambda: open_session(model_dir(), pooling=pooling), batch_size=batch_size)

    @classmethod
    def from_directory(cls, profile: EmbeddingProfile, model_dir: Callable[[], Path], *, fastembed_name: str,
                           hf_source: str, batch_size: int = 16, pooling: Pooling = "mean") -> OnnxEmbedder:
        """A sentence-transformer ONNX directory the user supplies, run by fastembed; ``model_dir`` returns it
        verified, or raises ConfigurationError/EmbeddingError."""
        return cls(profile, lambda: open_fastembed(model_dir(), name=fastembed_name, hf_source=hf_source,
                                                   dimension=profile.dimension, pooling=pooling),
                   batch_size=batch_size)

    @property
    def profile(self) -> EmbeddingProfile:
        return self._profile

    def _loaded(self) -> Any:
        if self._model is None:
            with native_call(), self._lock:  # onnxruntime and tokenizers: see pcmem.native_calls
                if self._model is None:
                    self._model = self._load()
        return self._model

    def embed_documents(self, texts: Sequence[str], progress: Progress | None = None) -> np.ndarray:
        """Texts are batched by similar length (less padding, faster); rows come back in input order."""
        import numpy as np  # lazy: a cold CLI call that searches full text only never imports numpy
        total = len(texts)
        out = np.empty((total, self._profile.dimension), dtype=np.float32)
        order = sorted(range(total), key=lambda i: len(texts[i]))
        model = self._loaded() if total else None
        with native_call():  # onnxruntime and tokenizers: see pcmem.native_calls
            self._embed_in_order(model, texts, order, out, progress)
        if self._normalize:
            out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out

    def _embed_in_order(self, model: Any, texts: Sequence[str], order: list[int], out: np.ndarray,
                        progress: Progress | None) -> None:
        import numpy as np

        total = len(texts)
        for start in range(0, total, self.batch_size):
            rows = order[start:start + self.batch_size]
            assert model is not None  # loaded above: there are texts
            try:
                out[rows] = np.stack(list(model.embed([texts[i] for i in rows], batch_size=len(rows))))
            except PcmemError:
                raise
            except Exception as exc:
                raise EmbeddingError(f"embedding a batch of {len(rows)} texts failed: {exc}") from exc
            if progress is not None:
                progress(start + len(rows), total)

    def embed_query(self, text: str) -> np.ndarray:
        return self._queries.memoised(text, lambda q: self.embed_documents([q])[0])
