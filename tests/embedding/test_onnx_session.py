"""pcmem's own models run on onnxruntime + tokenizers directly (SentenceSession), not through fastembed: the vectors
must be bit-identical to fastembed's for the same directory, or stores embedded before the switch would no longer
match their queries exactly. fastembed stays installed (``fastembed:MODEL`` catalogue models), so it is the oracle.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tokenizers import Tokenizer

from pcmem import settings
from pcmem.embedding import minilm, mpnet_preset, presets
from pcmem.embedding.onnx_embedder import OnnxEmbedder, SentenceSession, open_fastembed, open_session
from pcmem.errors import EmbeddingError
from pcmem.types.embedding import EmbeddingProfile

pytestmark = pytest.mark.slow

LONG = "The release checklist moved to the wiki after the Windows installer broke twice. " * 40  # > 384 tokens
TEXTS = [
    "ok",
    "",
    "   ",
    "We deploy the desktop app every Thursday afternoon.",
    "与上海合作伙伴的周会改到每周二上午十点。",
    "日本語のかなとカタカナ、そして絵文字 🚀🎉",
    "Ünïcödé façade — ｆｕｌｌｗｉｄｔｈ, naïve café, ß, İstanbul",
    "[CLS] literal special tokens [SEP] <s> </s> <mask> [PAD]",
    "Was hast du am Wochenende gemacht?",
    LONG,
    "x" * 3000,
    "a b c d e f g " * 90,
]


def _pair(directory: Path, dimension: int, batch_size: int) -> tuple[OnnxEmbedder, OnnxEmbedder]:
    profile = EmbeddingProfile(f"test/{directory.name}", dimension, True)
    direct = OnnxEmbedder.from_prepared_directory(profile, lambda: directory, batch_size=batch_size)
    reference = OnnxEmbedder(profile, lambda: open_fastembed(directory, name=f"pcmem-test/{directory.name}",
                                                            hf_source="pcmem-test/oracle", dimension=dimension),
                             batch_size=batch_size)
    return direct, reference


def _assert_bit_identical(directory: Path, dimension: int, batch_size: int, max_length: int) -> None:
    untruncated = Tokenizer.from_file(str(directory / "tokenizer.json"))
    untruncated.no_truncation()
    assert len(untruncated.encode(LONG).ids) > max_length  # the long texts really are truncated
    direct, reference = _pair(directory, dimension, batch_size)
    together = direct.embed_documents(TEXTS)
    assert together.dtype == np.float32 and together.shape == (len(TEXTS), dimension)
    np.testing.assert_array_equal(together, reference.embed_documents(TEXTS))
    for text in TEXTS:  # alone, i.e. without batch neighbours or padding
        np.testing.assert_array_equal(direct.embed_query(text), reference.embed_query(text))


def test_minilm_vectors_are_bit_identical_to_fastembed(tmp_path: Path) -> None:
    directory = minilm.prepare_model_dir(tmp_path / "minilm")
    _assert_bit_identical(directory, minilm.PROFILE.dimension, batch_size=16, max_length=256)
    with_one_batch = _pair(directory, minilm.PROFILE.dimension, batch_size=len(TEXTS))  # one padded batch of all
    np.testing.assert_array_equal(with_one_batch[0].embed_documents(TEXTS), with_one_batch[1].embed_documents(TEXTS))


@pytest.mark.parametrize("name, variant", [("mpnet-base", "fp32"), ("mpnet-base-int8", "int8")])
def test_mpnet_vectors_are_bit_identical_to_fastembed(name: str, variant: mpnet_preset.Variant) -> None:
    root = settings.cache_dir()
    if not mpnet_preset.is_prepared(variant, root):  # preparing takes minutes and torch; tests/embedding/test_mpnet_build.py does it
        pytest.skip(f"{name} is not prepared in {root}: pcmem models prepare {name}")
    preset = presets.EMBEDDER_PRESETS[name]
    _assert_bit_identical(mpnet_preset.verified_dir(variant, root), preset.profile.dimension, preset.batch_size, 384)


def test_the_session_uses_one_thread_and_full_graph_optimisation(tmp_path: Path) -> None:
    import onnxruntime as ort

    session = SentenceSession(minilm.prepare_model_dir(tmp_path / "minilm"))
    options = session._session.get_session_options()
    assert (options.intra_op_num_threads, options.inter_op_num_threads) == (1, 1)
    assert options.graph_optimization_level == ort.GraphOptimizationLevel.ORT_ENABLE_ALL


def test_a_directory_that_cannot_load_is_an_embedding_error(tmp_path: Path) -> None:
    directory = minilm.prepare_model_dir(tmp_path / "minilm")
    (directory / "tokenizer_config.json").unlink()
    with pytest.raises(EmbeddingError, match="no tokenizer_config.json"):
        open_session(directory)
    (directory / "model.onnx").write_bytes(b"not an onnx graph")
    with pytest.raises(EmbeddingError, match="cannot load the embedding model"):
        open_session(directory)
