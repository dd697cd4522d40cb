"""HashingEmbedder, validate_vectors and embed_checked."""

from __future__ import annotations

import asyncio
import hashlib
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from memory_kernel.embeddings import HashingEmbedder, embed_checked, validate_vectors
from memory_kernel.errors import EmbedderError, InvalidVectorError

SRC = Path(__file__).resolve().parents[1] / "src"
TEXTS = [
    "The cat sat on the mat.",
    "Ich wohne in Zürich, nicht in München.",
    "Кошка спит на диване",
    "user prefers dark mode in the editor",
]

# Prints a digest of the vectors of TEXTS, computed in a fresh interpreter.
_CHILD = f"""
import hashlib
from memory_kernel.embeddings import HashingEmbedder
vectors = HashingEmbedder(384).embed_sync({TEXTS!r})
print(hashlib.sha256(vectors.tobytes()).hexdigest())
"""


def _digest_in_subprocess(hash_seed: str) -> str:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": str(SRC)}
    done = subprocess.run(
        [sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def _cos(a: npt.NDArray[np.float32], b: npt.NDArray[np.float32]) -> float:
    return float(np.dot(a, b))


def test_vectors_are_identical_across_processes_with_different_hash_seeds() -> None:
    first = _digest_in_subprocess("1")
    second = _digest_in_subprocess("4242")
    here = hashlib.sha256(HashingEmbedder(384).embed_sync(TEXTS).tobytes()).hexdigest()
    assert first == second == here


async def test_shape_dtype_and_unit_norm() -> None:
    emb = HashingEmbedder(256)
    out = await emb.embed(TEXTS)
    assert out.shape == (len(TEXTS), 256)
    assert out.dtype == np.float32
    assert out.flags.c_contiguous
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-5)


def test_name_encodes_version_and_dim() -> None:
    assert HashingEmbedder().name == "hashing-v1-384"
    assert HashingEmbedder(128).dim == 128
    assert HashingEmbedder(128).name == "hashing-v1-128"


@pytest.mark.parametrize("bad", [0, 4, -1, True, 3.5])
def test_rejects_bad_dim(bad: object) -> None:
    with pytest.raises(ValueError, match="dim"):
        HashingEmbedder(bad)  # type: ignore[arg-type]


async def test_paraphrase_scores_higher_than_unrelated() -> None:
    emb = HashingEmbedder()
    base, para, other = await emb.embed(
        [
            "The user prefers dark mode in the code editor.",
            "User prefers the editor in dark mode",
            "Quarterly revenue grew because of strong sales in Asia.",
        ]
    )
    assert _cos(base, para) > 0.6
    assert _cos(base, other) < 0.2
    assert _cos(base, para) > _cos(base, other) + 0.4


async def test_case_and_punctuation_do_not_matter() -> None:
    a, b = await HashingEmbedder().embed(["Hello, World!", "hello world"])
    assert _cos(a, b) == pytest.approx(1.0, abs=1e-6)


async def test_inflections_get_partial_credit_from_char_ngrams() -> None:
    emb = HashingEmbedder()
    run, running, table = await emb.embed(["running", "runner", "table"])
    assert _cos(run, running) > _cos(run, table)


async def test_empty_list_and_tokenless_text() -> None:
    emb = HashingEmbedder(64)
    assert (await emb.embed([])).shape == (0, 64)
    out = await emb.embed(["", "  ...!!  ", "word"])
    assert not out[0].any()
    assert not out[1].any()
    assert np.linalg.norm(out[2]) == pytest.approx(1.0)


async def test_a_batch_with_no_word_at_all_is_zero_vectors() -> None:
    # An emoji-only turn alone in its batch: no feature, so bincount counted in integers.
    out = await HashingEmbedder(64).embed(["🙂", "?!"])
    assert out.dtype == np.float32
    assert out.shape == (2, 64) and not out.any()


async def test_large_batch_off_loop_matches_inline_result() -> None:
    emb = HashingEmbedder()
    texts = [f"memory number {i} about topic {i % 7}" for i in range(1500)]
    threaded = await emb.embed(texts)  # > 256 texts: runs in a worker thread
    inline = np.concatenate([emb.embed_sync(texts[i : i + 100]) for i in range(0, 1500, 100)])
    assert np.array_equal(threaded, inline)


def test_validate_vectors_returns_contiguous_float32() -> None:
    arr = np.asfortranarray(np.ones((3, 4), dtype=np.float64))
    out = validate_vectors(arr, dim=4, count=3)
    assert out.dtype == np.float32
    assert out.flags.c_contiguous
    assert out.shape == (3, 4)


@pytest.mark.parametrize(
    ("arr", "match"),
    [
        (np.array([[0.0, np.nan]]), "NaN"),
        (np.array([[np.inf, 0.0]]), "inf"),
        (np.array([[1e300, 0.0]]), "inf"),  # finite in float64, inf in float32
        (np.zeros((1, 3)), "dimension 2, got dimension 3"),
        (np.zeros((2, 2)), "expected 1 vectors, got 2"),
        (np.zeros(2), "2-D"),
        ([[0.0], [1.0, 2.0]], "not a numeric array"),
        ([["a", "b"]], "not a numeric array"),
    ],
)
def test_validate_vectors_rejects(arr: object, match: str) -> None:
    with pytest.raises(InvalidVectorError, match=match):
        validate_vectors(arr, dim=2, count=1)


class _ScriptedEmbedder:
    """A small real embedder whose behaviour each test chooses."""

    def __init__(self, *, fail: BaseException | None = None, delay: float = 0.0) -> None:
        self.fail = fail
        self.delay = delay
        self.calls = 0
        self.result: object = None

    @property
    def name(self) -> str:
        return "scripted-2"

    @property
    def dim(self) -> int:
        return 2

    async def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.calls += 1
        await asyncio.sleep(self.delay)
        if self.fail is not None:
            raise self.fail
        if self.result is not None:
            return self.result  # type: ignore[return-value]
        return np.ones((len(texts), 2), dtype=np.float32)


async def test_embed_checked_passes_good_vectors() -> None:
    out = await embed_checked(_ScriptedEmbedder(), ["a", "b"], timeout=1.0)
    assert out.shape == (2, 2)
    assert out.dtype == np.float32


async def test_embed_checked_wraps_errors_and_names_the_embedder() -> None:
    boom = RuntimeError("model exploded")
    with pytest.raises(EmbedderError, match=r"scripted-2.*model exploded") as info:
        await embed_checked(_ScriptedEmbedder(fail=boom), ["a"], timeout=None)
    assert info.value.__cause__ is boom


async def test_embed_checked_enforces_the_timeout() -> None:
    slow = _ScriptedEmbedder(delay=5.0)
    loop = asyncio.get_running_loop()
    started = loop.time()
    with pytest.raises(EmbedderError, match="timed out"):
        await embed_checked(slow, ["a"], timeout=0.05)
    assert loop.time() - started < 2.0


async def test_embed_checked_rejects_bad_output_and_keeps_invalid_vector_errors() -> None:
    bad = _ScriptedEmbedder()
    bad.result = np.array([[np.nan, 0.0]], dtype=np.float32)
    with pytest.raises(InvalidVectorError, match="NaN"):
        await embed_checked(bad, ["a"], timeout=1.0)
    own = _ScriptedEmbedder(fail=InvalidVectorError("bad vector"))
    with pytest.raises(InvalidVectorError, match="bad vector"):
        await embed_checked(own, ["a"], timeout=1.0)


async def test_embed_checked_skips_the_embedder_for_no_texts() -> None:
    emb = _ScriptedEmbedder(fail=RuntimeError("must not be called"))
    out = await embed_checked(emb, [], timeout=1.0)
    assert out.shape == (0, 2)
    assert emb.calls == 0


async def test_embed_checked_with_hashing_embedder() -> None:
    out = await embed_checked(HashingEmbedder(), TEXTS, timeout=5.0)
    assert out.shape == (len(TEXTS), 384)
