"""The facts service (filled in by the facts issue)."""

from __future__ import annotations

from memory_kernel.runtime import Runtime

__all__ = ["FactService"]


class FactService:
    def __init__(self, runtime: Runtime) -> None:
        self._rt = runtime
