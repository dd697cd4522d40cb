"""What every service needs, wired once by the kernel."""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import ParamSpec, TypeVar

import numpy as np

from memory_kernel.config import MemoryKernelConfig
from memory_kernel.embeddings import embed_checked
from memory_kernel.errors import EmbedderError, InvalidVectorError
from memory_kernel.judges.base import Judge
from memory_kernel.protocols import Clock, Embedder, EpisodeSummariser, FactExtractor
from memory_kernel.similarity import has_words
from memory_kernel.storage.database import Database
from memory_kernel.vectors import Vector

__all__ = ["MISSING", "OFF_LOOP_CHARS", "Missing", "Runtime", "Vector", "off_loop"]

#: An embedding as the library passes it around.

_log = logging.getLogger("memory_kernel")


class Missing(enum.Enum):
    """``MISSING``: no vector was given, so the callee embeds the text itself (``None``
    means the caller tried and there is none)."""

    MISSING = "missing"


MISSING = Missing.MISSING

P = ParamSpec("P")
T = TypeVar("T")

#: Text work on more characters than this runs in a worker thread (``off_loop``): a 1 MiB
#: message read on the event loop stalled every other task of the process for tenths of a
#: second; a short one is not worth a thread hop.
OFF_LOOP_CHARS = 64 * 1024


async def off_loop(chars: int, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """``fn(*args, **kwargs)``, in a worker thread when it reads more than
    ``OFF_LOOP_CHARS`` characters of text (``chars``), else right here. For pure functions
    only (a cancelled caller stops waiting; the thread finishes unseen). Functions that read
    long texts do it in short native calls (``similarity.space_pieces``), so the event loop
    gets the interpreter back between them."""
    if chars <= OFF_LOOP_CHARS:
        return fn(*args, **kwargs)
    return await asyncio.to_thread(fn, *args, **kwargs)


@dataclass(frozen=True, slots=True)
class Runtime:
    db: Database
    embedder: Embedder
    clock: Clock
    config: MemoryKernelConfig
    judge: Judge | None = None
    extractor: FactExtractor | None = None
    summariser: EpisodeSummariser | None = None

    async def embed(self, texts: list[str]) -> Vector:
        """Embed with the configured timeout; failures are ``EmbedderError``, bad vectors
        ``InvalidVectorError``."""
        return await embed_checked(
            self.embedder, texts, timeout=self.config.storage.embed_timeout_s
        )

    async def embed_each(self, texts: list[str]) -> list[Vector | None]:
        """Each text's vector, or ``None`` for a text without words and for a zero vector
        (it has no direction to compare); the embedder's failures raise, as :meth:`embed`'s."""
        wanted = [i for i, t in enumerate(texts) if has_words(t)]
        found: list[Vector | None] = [None] * len(texts)
        if not wanted:
            return found
        vectors = await self.embed([texts[i] for i in wanted])
        for i, vector in zip(wanted, vectors, strict=True):
            found[i] = vector if float(np.linalg.norm(vector)) > 0.0 else None
        return found

    async def embed_or_none(self, texts: list[str]) -> list[Vector | None]:
        """:meth:`embed_each`, and ``None`` for every text when the embedder is down or
        answers garbage (NaN, wrong dimension): an outage stores memories without a vector,
        to be embedded later (``pending_embed`` facts; the others by ``consolidate``),
        instead of failing the caller."""
        try:
            return await self.embed_each(texts)
        except (EmbedderError, InvalidVectorError) as exc:
            _log.warning("stored without a vector: %s", exc)
            return [None] * len(texts)
