"""The pluggable parts, as ``typing.Protocol`` s.

Each has a default implementation in the package and a fake in ``memory_kernel.testing``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:  # type-only: protocols stay a leaf module (no import cycles)
    from memory_kernel.models.context import ContextRequest, NodeContent

__all__ = ["Clock", "ContextNodeProvider", "Embedder", "SystemClock", "TokenCounter"]

FloatMatrix = npt.NDArray[np.float32]


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


@runtime_checkable
class ContextNodeProvider(Protocol):
    """A context node the host provides beside the built-in ones (identity, tools, skills,
    world state…). ``fetch`` is awaited only when the relevance pipeline includes the node
    named ``name``; it returns a ``NodeContent`` (``memory_kernel.models.context``)."""

    @property
    def name(self) -> str: ...

    async def fetch(self, request: ContextRequest) -> NodeContent: ...
