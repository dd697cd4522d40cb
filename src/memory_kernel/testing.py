"""Fakes for your own tests (httpx-style): a clock you move by hand, an embedder you can
break on purpose and a judge that answers from a script. They are real implementations of
the protocols, just controllable."""

from __future__ import annotations

import asyncio
import re
from collections import deque
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from memory_kernel.embeddings import HashingEmbedder, default_embedder
from memory_kernel.errors import JudgeError
from memory_kernel.judges.base import AdmissionRequest
from memory_kernel.models.extraction import ExtractedFact, ExtractionTurn
from memory_kernel.protocols import Embedder
from memory_kernel.vectors import FloatMatrix

__all__ = ["FakeEmbedder", "FakeExtractor", "FrozenClock", "ScriptedJudge"]


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
    """The default embedder (or, given ``dim``, a hashing one of that size) that can be made
    to fail, hang or count its calls.

    ``fail`` makes every call raise; ``delay_s`` makes calls sleep first (to exercise
    timeouts); ``calls`` counts calls and ``texts_seen`` counts texts.
    """

    def __init__(self, dim: int | None = None, *, name: str | None = None) -> None:
        self._inner: Embedder = default_embedder() if dim is None else HashingEmbedder(dim=dim)
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


class ScriptedJudge:
    """A judge that answers from a script and records what it was asked.

    Each request of a batch takes the next item of ``answers``:

    * an ``AdmissionVerdict`` or a mapping in its JSON shape is returned as the answer (a
      mapping is returned as is, so an invalid one is "garbage" the caller must reject);
    * a callable is called with the ``AdmissionRequest`` and its result used instead (to
      point at candidate ids only known at run time);
    * a ``JudgeError`` fills that slot (that item failed); any other exception is raised
      (the whole batch failed);
    * anything else (a string, ``None``...) is returned as is: garbage.

    ``fail`` makes every call raise, ``delay_s`` makes calls sleep first (a "hang" for
    timeout tests). ``requests`` lists every request received; a spent script answers
    ``JudgeError``.
    """

    def __init__(self, answers: Iterable[object] = (), *, name: str = "scripted") -> None:
        self._script: deque[object] = deque(answers)
        self._name = name
        self.requests: list[AdmissionRequest] = []
        self.fail: BaseException | None = None
        self.delay_s = 0.0

    @property
    def name(self) -> str:
        return self._name

    def add(self, *answers: object) -> None:
        """Append answers to the script."""
        self._script.extend(answers)

    async def admit(self, requests: Sequence[AdmissionRequest]) -> Sequence[Any]:
        self.requests.extend(requests)
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if self.fail is not None:
            raise self.fail
        return [self._next(request) for request in requests]

    def _next(self, request: AdmissionRequest) -> object:
        if not self._script:
            return JudgeError("ScriptedJudge: the script has no answer left")
        item = self._script.popleft()
        if callable(item) and not isinstance(item, type):
            item = item(request)
        if isinstance(item, BaseException) and not isinstance(item, JudgeError):
            raise item
        return item


class FakeExtractor:
    """A deterministic fact extractor: every "my <slot> is <value>" a user says becomes
    "The user's <slot> is <value>." with subject "user <slot>" (so a later value of the
    slot supersedes it); assistant turns give nothing.

    ``fail`` makes every call raise; ``fail_on`` makes a call raise when one of its turns
    contains that text (a "poison" turn); ``delay_s`` makes calls sleep first. ``calls``
    counts calls, ``batches`` keeps the turn ids of each call.
    """

    _SLOT = re.compile(r"\bmy ([a-z][a-z ]{0,40}?) is ([^.,;!?\n]+)", re.IGNORECASE)

    def __init__(self, *, name: str = "fake-extractor", confidence: float = 0.8) -> None:
        self._name = name
        self._confidence = confidence
        self.fail: BaseException | None = None
        self.fail_on: str | None = None
        self.delay_s = 0.0
        self.calls = 0
        self.batches: list[list[Any]] = []

    @property
    def name(self) -> str:
        return self._name

    async def extract(self, turns: Sequence[ExtractionTurn]) -> list[list[ExtractedFact]]:
        self.calls += 1
        self.batches.append([t.turn_id for t in turns])
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if self.fail is not None:
            raise self.fail
        if self.fail_on is not None and any(self.fail_on in t.text for t in turns):
            raise RuntimeError(f"FakeExtractor: a turn contains {self.fail_on!r}")
        return [self.facts_of(t) for t in turns]

    def facts_of(self, turn: ExtractionTurn) -> list[ExtractedFact]:
        """What :meth:`extract` finds in one turn."""
        if turn.role != "user":
            return []
        return [
            ExtractedFact(
                content=f"The user's {slot.strip().lower()} is {value.strip()}.",
                subject=f"user {slot.strip().lower()}",
                confidence=self._confidence,
            )
            for slot, value in self._SLOT.findall(turn.text)
        ]
