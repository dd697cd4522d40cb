"""Fakes for your own tests (httpx-style): a clock you move by hand and an embedder you can
break on purpose. They are real implementations of the protocols, just controllable."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import numpy as np

from memory_kernel.embeddings import HashingEmbedder
from memory_kernel.protocols import FloatMatrix

__all__ = ["FakeEmbedder", "FrozenClock"]


class FrozenClock:
    """A clock that stands still until you ``advance`` it."""

    def __init__(self, start: datetime | None = None) -> None:
        start = start or datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
        if start.tzinfo is None:
            raise ValueError("FrozenClock needs a timezone-aware datetime")
        self._now = start.astimezone(UTC)

    def now(self) -> datetime:
        return self._now

    def advance(self, delta: timedelta | None = None, **kwargs: float) -> datetime:
        """Move forward by ``delta`` or by ``timedelta(**kwargs)``; returns the new time."""
        self._now += delta if delta is not None else timedelta(**kwargs)
        return self._now

    def set(self, when: datetime) -> None:
        self._now = when.astimezone(UTC)


class FakeEmbedder:
    """A hashing embedder that can be made to fail, hang or count its calls.

    ``fail`` makes every call raise; ``delay_s`` makes calls sleep first (to exercise
    timeouts); ``calls`` counts calls and ``texts_seen`` counts texts.
    """

    def __init__(self, dim: int = 384, *, name: str | None = None) -> None:
        self._inner = HashingEmbedder(dim=dim)
        self._name = name or self._inner.name
        self.fail: BaseException | None = None
        self.delay_s = 0.0
        self.calls = 0
        self.texts_seen = 0

    @property
    def name(self) -> str:
        return self._name

    @property
    def dim(self) -> int:
        return self._inner.dim

    async def embed(self, texts: Sequence[str]) -> FloatMatrix:
        self.calls += 1
        self.texts_seen += len(texts)
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if self.fail is not None:
            raise self.fail
        return np.asarray(await self._inner.embed(texts), dtype=np.float32)
