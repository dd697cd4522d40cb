"""``kernel.brain``: decisions (filled in by the brain issue)."""

from __future__ import annotations

from memory_kernel.runtime import Runtime

__all__ = ["Brain"]


class Brain:
    def __init__(self, runtime: Runtime) -> None:
        self._rt = runtime
