"""The episodes service (filled in by the episodes issue)."""

from __future__ import annotations

from memory_kernel.runtime import Runtime

__all__ = ["EpisodeService"]


class EpisodeService:
    def __init__(self, runtime: Runtime) -> None:
        self._rt = runtime
