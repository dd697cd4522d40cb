"""What every service needs, wired once by the kernel."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from memory_kernel.config import MemoryKernelConfig
from memory_kernel.embeddings import embed_checked
from memory_kernel.judges.base import Judge
from memory_kernel.protocols import Clock, Embedder
from memory_kernel.storage.database import Database

__all__ = ["Runtime"]


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
