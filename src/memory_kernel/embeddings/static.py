"""A semantic embedder without torch: one vector per token, distilled from a sentence model.

A model2vec model is a table of token vectors computed once from a sentence transformer
(``scripts/distill_static_model.py``); a text's vector is the mean of its tokens' vectors.
It finds "The user drives an electric car" for "what kind of vehicle do they own", which
the lexical ``HashingEmbedder`` cannot, with numpy, ``tokenizers`` and ``safetensors`` at
run time. It reads word order not at all, and only a text's first 512 tokens; it does not
tell a synonym from a sibling or an opposite ("runs" / "manages" lie further apart than
"faster" / "slower", docs/tuning.md). The package ships one
model, distilled from all-MiniLM-L6-v2 (``StaticEmbedder.packaged()``, 3.8 MB); it is the
semantic half of the ``HybridEmbedder``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from memory_kernel.embeddings.hashing import off_the_loop
from memory_kernel.errors import ConfigError, EmbedderError
from memory_kernel.vectors import FloatMatrix

__all__ = ["PACKAGED_STATIC_MODEL", "StaticEmbedder"]

#: The model the package ships, distilled from all-MiniLM-L6-v2 (its licence beside it).
PACKAGED_STATIC_MODEL = Path(__file__).parent / "data" / "minilm-static-128"
_PACKAGED_NAME = "static:minilm-l6-v2-128"


class StaticEmbedder:
    """Embeds with ``model2vec.StaticModel``; ``model`` is a local model directory.

    ``name`` defaults to ``static:<directory name>``.
    """

    def __init__(self, model: str | Path, *, name: str | None = None) -> None:
        try:
            from model2vec import StaticModel
        except ImportError as exc:
            raise ConfigError(
                "StaticEmbedder needs model2vec: pip install 'memory-kernel[static]'"
            ) from exc
        path = Path(model)
        if not (path / "model.safetensors").is_file():
            raise ConfigError(f"{path} holds no model2vec model (no model.safetensors)")
        self._model: Any = _load(StaticModel, path.resolve())
        self._dim = int(self._model.dim)
        self._name = name or f"static:{path.resolve().name}"

    @classmethod
    def packaged(cls) -> StaticEmbedder:
        """The model shipped in the package (all-MiniLM-L6-v2's tokens, 128 dimensions)."""
        return cls(PACKAGED_STATIC_MODEL, name=_PACKAGED_NAME)

    @property
    def name(self) -> str:
        return self._name

    @property
    def dim(self) -> int:
        return self._dim

    async def embed(self, texts: Sequence[str]) -> FloatMatrix:
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        batch = list(texts)
        if off_the_loop(batch):  # a large batch must not stall the other coroutines
            return await asyncio.to_thread(self._encode, batch)
        return self._encode(batch)

    def _encode(self, texts: list[str]) -> FloatMatrix:
        # No worker processes: a library must not fork its host.
        out = self._model.encode(texts, show_progress_bar=False, use_multiprocessing=False)
        return np.ascontiguousarray(out, dtype=np.float32)

    def __repr__(self) -> str:
        return f"StaticEmbedder(name={self._name!r}, dim={self._dim})"


@cache
def _load(loader: Any, path: Path) -> Any:
    """The model in ``path``, loaded once per process: every kernel opened with the default
    embedder shares one table (read-only once loaded) instead of a quarter second each."""
    try:
        return loader.from_pretrained(str(path), normalize=True)
    except Exception as exc:
        raise EmbedderError(f"cannot load the static model in {path}: {exc}") from exc
