"""The pluggable parts, as ``typing.Protocol`` s.

Each has a default implementation in the package and a fake in ``memory_kernel.testing``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from memory_kernel.errors import ConfigError
from memory_kernel.vectors import FloatMatrix as FloatMatrix

if TYPE_CHECKING:  # type-only: protocols stay a leaf module (no import cycles)
    from memory_kernel.models.context import ContextRequest, NodeContent
    from memory_kernel.models.extraction import ExtractedFact, ExtractionTurn

__all__ = [
    "CheckedClock",
    "Clock",
    "ContextNodeProvider",
    "Embedder",
    "FactExtractor",
    "SystemClock",
    "TokenCounter",
]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit vectors.

    ``embed`` returns a float32 array of shape ``(len(texts), dim)``. Implementations may
    raise anything; the kernel wraps failures into ``EmbedderError`` and validates the
    shape and finiteness of what comes back.
    """

    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    async def embed(self, texts: Sequence[str]) -> FloatMatrix: ...


@runtime_checkable
class Clock(Protocol):
    """Where time comes from, so windows and decay can be tested without sleeping."""

    def now(self) -> datetime:
        """A timezone-aware UTC datetime."""
        ...


@runtime_checkable
class TokenCounter(Protocol):
    """Counts the tokens a text costs in the model's prompt."""

    def count(self, text: str) -> int: ...


class SystemClock:
    """The wall clock, in UTC."""

    def now(self) -> datetime:
        return datetime.now(UTC)


class CheckedClock:
    """The kernel's view of the caller's clock: every reading is checked.

    A naive datetime would be stored as if it were UTC and make later comparisons with aware
    ones raise; a time near ``datetime.min``/``max`` overflows the windows the library adds
    and subtracts. Either is a broken clock: ``ConfigError``, before anything is written.
    """

    #: The readings accepted, from EARLIEST (inclusive) to LATEST (exclusive).
    EARLIEST = datetime(1900, 1, 1, tzinfo=UTC)
    LATEST = datetime(9000, 1, 1, tzinfo=UTC)

    def __init__(self, clock: Clock) -> None:
        self.clock = clock

    def now(self) -> datetime:
        value = self.clock.now()
        if not isinstance(value, datetime) or value.utcoffset() is None:
            raise ConfigError(
                f"the clock {type(self.clock).__name__} returned {value!r:.80}: Clock.now() "
                "must return a timezone-aware datetime, e.g. datetime.now(UTC)"
            )
        if not self.EARLIEST <= value < self.LATEST:
            raise ConfigError(
                f"the clock {type(self.clock).__name__} returned {value.isoformat()}, outside "
                f"{self.EARLIEST.year}-{self.LATEST.year}"
            )
        return value


@runtime_checkable
class EpisodeSummariser(Protocol):
    """Writes an ended episode's summary from its turns (oldest first), at most
    ``max_chars`` characters, the newest value of anything that changed. Called when the
    episode ends, outside any transaction; it may raise anything or hang: the kernel bounds
    it with ``HeartConfig.episode_summariser_timeout_s`` and falls back to the extractive
    summary (``heart.episodes.summary``), so an episode always ends."""

    @property
    def name(self) -> str: ...

    async def summarise(self, turns: Sequence[ExtractionTurn], *, max_chars: int) -> str: ...


@runtime_checkable
class ContextNodeProvider(Protocol):
    """A context node the host provides beside the built-in ones (identity, tools, skills,
    world state…). ``fetch`` is awaited only when the relevance pipeline includes the node
    named ``name``; it returns a ``NodeContent`` (``memory_kernel.models.context``)."""

    @property
    def name(self) -> str: ...

    async def fetch(self, request: ContextRequest) -> NodeContent: ...


@runtime_checkable
class FactExtractor(Protocol):
    """Finds facts in what was said. ``extract`` gets turns of one agent, oldest first, and
    returns one list of ``ExtractedFact`` per turn, in the same order (empty: nothing worth
    keeping). It runs off the hot path (the extraction queue); it may raise anything: the
    kernel wraps failures into ``ExtractorError`` and retries the turns later."""

    @property
    def name(self) -> str: ...

    async def extract(self, turns: Sequence[ExtractionTurn]) -> list[list[ExtractedFact]]: ...
