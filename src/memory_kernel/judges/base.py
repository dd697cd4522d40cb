"""The ``Judge`` protocol."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = ["Judge"]


@runtime_checkable
class Judge(Protocol):
    """Decides ambiguous cases in batches; any failure makes callers fall back to rules."""

    @property
    def name(self) -> str: ...
