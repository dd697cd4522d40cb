"""Lexical and semantic vectors side by side, as hybrid search ranks by both.

The ``HybridEmbedder`` concatenates a lexical vector (``HashingEmbedder``: shared words,
names, numbers, identifiers) and a semantic one (``StaticEmbedder``: words of related
meaning), each unit length and scaled by the square root of its share, so the cosine of
two texts is the weighted mean of the two cosines. A paraphrase with few shared words is
found by the semantic half; "staging" and "prod", or 14 and 24, which a semantic vector
barely tells apart, stay apart by the lexical half. Both halves run with numpy, no torch.
What it gains over each half alone is measured in docs/tuning.md.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from memory_kernel.embeddings.hashing import HashingEmbedder
from memory_kernel.embeddings.static import StaticEmbedder
from memory_kernel.errors import ConfigError
from memory_kernel.protocols import Embedder
from memory_kernel.vectors import FloatMatrix

__all__ = ["HYBRID_NAME", "HybridEmbedder", "default_embedder"]

#: The name of the packaged pair (hashing 384 + static 128, equal shares): its vectors,
#: fact scorer weights and stored rows belong to this name.
HYBRID_NAME = "hybrid-v1-512"
_SHARE = 0.5


class HybridEmbedder:
    """``lexical`` and ``semantic`` vectors concatenated; the semantic half weighs
    ``semantic_share`` of the cosine. Without arguments: the packaged pair, named
    :data:`HYBRID_NAME`."""

    def __init__(
        self,
        lexical: Embedder | None = None,
        semantic: Embedder | None = None,
        *,
        semantic_share: float = _SHARE,
        name: str | None = None,
    ) -> None:
        if not 0.0 < semantic_share < 1.0:
            raise ConfigError(f"semantic_share must be in (0, 1), got {semantic_share}")
        packaged = lexical is None and semantic is None and semantic_share == _SHARE
        self._parts: tuple[Embedder, Embedder] = (
            lexical or HashingEmbedder(),
            semantic or StaticEmbedder.packaged(),
        )
        self._scales = (math.sqrt(1.0 - semantic_share), math.sqrt(semantic_share))
        if name is None:
            lex, sem = (part.name for part in self._parts)
            name = HYBRID_NAME if packaged else f"hybrid:{lex}+{sem}@{semantic_share:g}"
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    @property
    def dim(self) -> int:
        return sum(part.dim for part in self._parts)

    @property
    def parts(self) -> tuple[Embedder, Embedder]:
        """The lexical and the semantic embedder."""
        return self._parts

    async def embed(self, texts: Sequence[str]) -> FloatMatrix:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        blocks = [
            np.asarray(await part.embed(texts), dtype=np.float32) * scale
            for part, scale in zip(self._parts, self._scales, strict=True)
        ]
        out = np.hstack(blocks)
        # A text one half has nothing of (no word the tokenizer knows, say) is carried by
        # the other alone: unit length again, so every cosine stays in [-1, 1].
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return np.ascontiguousarray(out, dtype=np.float32)

    def __repr__(self) -> str:
        return f"HybridEmbedder(name={self._name!r}, dim={self.dim})"


def default_embedder() -> HybridEmbedder:
    """The embedder a kernel opens with when none is given: the packaged hybrid
    (:data:`HYBRID_NAME`), whose thresholds and fact scorer weights are the defaults."""
    return HybridEmbedder()
