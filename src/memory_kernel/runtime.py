"""What every service needs, wired once by the kernel."""

from __future__ import annotations

import enum
import logging
from dataclasses import dataclass
from typing import TypeAlias

import numpy as np
import numpy.typing as npt

from memory_kernel.config import MemoryKernelConfig
from memory_kernel.embeddings import embed_checked
from memory_kernel.errors import EmbedderError, InvalidVectorError
from memory_kernel.judges.base import Judge
from memory_kernel.protocols import Clock, Embedder
from memory_kernel.similarity import words
from memory_kernel.storage.database import Database

__all__ = ["MISSING", "Missing", "Runtime", "Vector"]

#: An embedding as the library passes it around.
Vector: TypeAlias = npt.NDArray[np.float32]

_log = logging.getLogger("memory_kernel")


class Missing(enum.Enum):
    """``MISSING``: no vector was given, so the callee embeds the text itself (``None``
    means the caller tried and there is none)."""

    MISSING = "missing"


MISSING = Missing.MISSING


@dataclass(frozen=True, slots=True)
class Runtime:
    db: Database
    embedder: Embedder
    clock: Clock
    config: MemoryKernelConfig
    judge: Judge | None = None

    async def embed(self, texts: list[str]) -> npt.NDArray[np.float32]:
        """Embed with the configured timeout; failures are ``EmbedderError``, bad vectors
        ``InvalidVectorError``."""
        return await embed_checked(
            self.embedder, texts, timeout=self.config.storage.embed_timeout_s
        )

    async def embed_or_none(self, texts: list[str]) -> list[Vector | None]:
        """Each text's vector, or ``None`` for a text without words (a zero vector has no
        direction to compare) and for every text when the embedder is down or answers
        garbage (NaN, wrong dimension): an outage stores memories without a vector, to be
        embedded later, instead of failing the caller."""
        wanted = [i for i, t in enumerate(texts) if words(t)]
        found: list[Vector | None] = [None] * len(texts)
        if not wanted:
            return found
        try:
            vectors = await self.embed([texts[i] for i in wanted])
        except (EmbedderError, InvalidVectorError) as exc:
            _log.warning("stored without a vector: %s", exc)
            return found
        for i, vector in zip(wanted, vectors, strict=True):
            found[i] = vector if float(np.linalg.norm(vector)) > 0.0 else None
        return found
