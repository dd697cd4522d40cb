"""The default embedder: feature hashing with numpy only, no model, no network.

It is lexical, not semantic: texts that share words, word pairs or word pieces score
high, so it catches restatements and near-duplicates but not synonyms. It is fully
deterministic across processes and machines because features are hashed with
BLAKE2b, never with Python's salted ``hash()``.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import re
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache
from itertools import pairwise

import numpy as np
import numpy.typing as npt

from memory_kernel.similarity import space_pieces
from memory_kernel.vectors import FloatMatrix

__all__ = ["HashingEmbedder", "off_the_loop"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]

_TOKEN = re.compile(r"\w+")

# Relative weights of the feature kinds. Whole words carry the meaning; bigrams reward
# shared phrasing; char 3-grams give partial credit to inflections ("runs"/"running").
_UNIGRAM_WEIGHT = 1.0
_BIGRAM_WEIGHT = 0.5
_CHAR3_WEIGHT = 0.5

# Function words match between almost any two English sentences; at full weight they
# make unrelated texts look similar, so they count for little (there is no corpus IDF).
_STOPWORD_WEIGHT = 0.2
_STOPWORD_TEXT = """
    a an the and or but if of to in on at by for with from as is are was were be been being
    am do does did has have had it its this that these those there here i me my we our you
    your he him his she her they them their what which who whom so than too very can will
    just not no s t
"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())

# Above this many texts, or characters in all, the CPU work is moved off the event loop: a
# 1 MiB text takes about a tenth of a second, and text full of words not seen before costs
# several times more per character (each new word's features are hashed once, then cached).
_THREAD_THRESHOLD = 256
_THREAD_CHARS = 16 * 1024


def off_the_loop(texts: Sequence[str]) -> bool:
    """Whether embedding ``texts`` is work to move off the event loop (every CPU-bound
    embedder here asks this): more than ``_THREAD_THRESHOLD`` texts or ``_THREAD_CHARS``
    characters in all."""
    return len(texts) > _THREAD_THRESHOLD or sum(map(len, texts)) > _THREAD_CHARS


# Characters tokenised per native call in a long text (see ``_counts``).
_PIECE_CHARS = 16 * 1024
# Texts embedded per bincount: bounds the temporary dense block to _BLOCK * dim floats.
_BLOCK = 1024


@lru_cache(maxsize=262_144)
def _slot(feature: str, dim: int) -> tuple[int, float]:
    """Map a feature to (index, sign) with a stable hash; cached as features repeat a lot."""
    digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    # The top bit gives the sign so colliding features cancel on average instead of adding.
    sign = -1.0 if value >> 63 else 1.0
    return value % dim, sign


def _bigram_weight(left: str, right: str) -> float:
    both_stop = left in _STOPWORDS and right in _STOPWORDS
    return _BIGRAM_WEIGHT * (_STOPWORD_WEIGHT if both_stop else 1.0)


@lru_cache(maxsize=65_536)
def _token_slots(token: str, dim: int) -> tuple[IntArray, FloatArray]:
    """Hashed (indices, signed weights) of a word's unigram and its char 3-grams.

    Cached per word because a word's features never change and words repeat a lot;
    this is what keeps the embedder fast.
    """
    stop = token in _STOPWORDS
    feats = [("w:" + token, _STOPWORD_WEIGHT if stop else _UNIGRAM_WEIGHT)]
    if not stop:
        padded = "#" + token + "#"
        feats += [("c:" + padded[i : i + 3], _CHAR3_WEIGHT) for i in range(len(padded) - 2)]
    slots = [_slot(feature, dim) for feature, _ in feats]
    index = np.array([slot for slot, _ in slots], dtype=np.intp)
    weight = np.array([sign * w for (_, sign), (_, w) in zip(slots, feats, strict=True)])
    index.setflags(write=False)  # shared through the cache: must never be changed in place
    weight.setflags(write=False)
    return index, weight


@lru_cache(maxsize=65_536)
def _bigram_slot(left: str, right: str, dim: int) -> tuple[int, float]:
    slot, sign = _slot("b:" + left + " " + right, dim)
    return slot, sign * _bigram_weight(left, right)


def _counts(text: str) -> tuple[Counter[str], Counter[tuple[str, str]]]:
    """Counts of the lowercased text's word tokens and of its adjacent token pairs, in
    order of first occurrence. A long text is read in whitespace-cut pieces
    (``similarity.space_pieces``: the same tokens, in the same order, as the whole), short
    native calls, so a worker thread embedding it hands the interpreter back often."""
    if len(text) <= _PIECE_CHARS:
        tokens = _TOKEN.findall(text.lower())
        return Counter(tokens), Counter(pairwise(tokens))
    unigrams: Counter[str] = Counter()
    bigrams: Counter[tuple[str, str]] = Counter()
    last: str | None = None
    for piece in space_pieces(text, _PIECE_CHARS):
        tokens = _TOKEN.findall(piece.lower())
        if not tokens:
            continue
        unigrams.update(tokens)
        if last is not None:
            bigrams[last, tokens[0]] += 1  # the pair across the cut, in its place
        bigrams.update(pairwise(tokens))
        last = tokens[-1]
    return unigrams, bigrams


def _tf(count: int) -> float:
    # Sub-linear: a word said three times is not three times as much about it.
    return 1.0 + math.log(count)


def _flatten(
    parts: list[tuple[int, float, IntArray, FloatArray]], dim: int
) -> tuple[IntArray, FloatArray]:
    """Concatenate per-word slots into flat (row * dim + index, weight * tf) arrays."""
    if not parts:
        return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.float64)
    lengths = np.array([len(p[2]) for p in parts], dtype=np.intp)
    rows = np.repeat(np.array([p[0] for p in parts], dtype=np.intp), lengths)
    scale = np.repeat(np.array([p[1] for p in parts], dtype=np.float64), lengths)
    index = np.concatenate([p[2] for p in parts])
    weight = np.concatenate([p[3] for p in parts])
    return rows * dim + index, weight * scale


class HashingEmbedder:
    """Signed feature hashing of word unigrams, word bigrams and char 3-grams.

    Texts are lowercased and split into unicode word tokens (``\\w+``); each feature is
    weighted by kind and by sub-linear term frequency ``1 + log(tf)``, hashed into
    ``dim`` buckets with a sign, and the result is L2-normalised.

    A text with no word tokens (empty, only punctuation) embeds to the zero vector;
    callers are expected to reject empty text before it gets here.
    """

    _VERSION = "v1"

    def __init__(self, dim: int = 384) -> None:
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 8:
            raise ValueError(f"dim must be an int >= 8, got {dim!r}")
        self._dim = dim

    @property
    def name(self) -> str:
        # Encodes the feature recipe's version: vectors from another version must not mix.
        return f"hashing-{self._VERSION}-{self._dim}"

    @property
    def dim(self) -> int:
        return self._dim

    async def embed(self, texts: Sequence[str]) -> FloatMatrix:
        if off_the_loop(texts):
            return await asyncio.to_thread(self.embed_sync, texts)
        return self.embed_sync(texts)

    def embed_sync(self, texts: Sequence[str]) -> FloatMatrix:
        """The same as ``embed``, for callers outside an event loop."""
        blocks = [self._embed_block(texts[i : i + _BLOCK]) for i in range(0, len(texts), _BLOCK)]
        if not blocks:
            return np.zeros((0, self._dim), dtype=np.float32)
        return np.ascontiguousarray(np.concatenate(blocks), dtype=np.float32)

    def _embed_block(self, texts: Sequence[str]) -> FloatMatrix:
        """Embed a block with one ``bincount``; per-text numpy calls would dominate."""
        dim = self._dim
        parts: list[tuple[int, float, IntArray, FloatArray]] = []
        bi_flat: list[int] = []
        bi_weight: list[float] = []
        for row, text in enumerate(texts):
            unigrams, bigrams = _counts(text)
            for token, count in unigrams.items():
                index, weight = _token_slots(token, dim)
                parts.append((row, 1.0 if count == 1 else _tf(count), index, weight))
            for (left, right), count in bigrams.items():
                slot, weight_b = _bigram_slot(left, right, dim)
                bi_flat.append(row * dim + slot)
                bi_weight.append(weight_b if count == 1 else weight_b * _tf(count))
        flat, weights = _flatten(parts, dim)
        flat = np.concatenate([flat, np.array(bi_flat, dtype=np.intp)])
        weights = np.concatenate([weights, np.array(bi_weight, dtype=np.float64)])
        # bincount sums colliding features, which a plain fancy-index assignment would drop.
        dense = np.bincount(flat, weights=weights, minlength=len(texts) * dim)
        # With no feature at all (a block of "🙂" or "?!") bincount counts in integers.
        matrix = dense.astype(np.float64, copy=False).reshape(len(texts), dim)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        # Texts without tokens stay zero vectors instead of becoming NaN.
        np.divide(matrix, norms, out=matrix, where=norms > 0.0)
        return matrix.astype(np.float32)

    def __repr__(self) -> str:
        return f"HashingEmbedder(dim={self._dim})"
