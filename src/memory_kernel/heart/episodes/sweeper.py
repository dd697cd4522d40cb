"""The idle-episode sweeper: a kernel-owned asyncio task that ends idle episodes.

A session's episode ends when the host says so (``end_session``), and otherwise after
``HeartConfig.episode_idle_end_s`` without a turn. Nobody calls anything then, so this task
does: every ``episode_sweep_s`` it ends (summary from the turns, admission) the idle
episodes of the agents that have some, as ``consolidate`` also does first thing. It sleeps
before its first round, so a short-lived kernel never sweeps. A failing round is logged and
the next one tries again; ``stop()`` cancels it (an end is one unit of work: all or nothing).
"""

from __future__ import annotations

import asyncio
import logging

from memory_kernel.background import PollingWorker
from memory_kernel.errors import MemoryKernelError
from memory_kernel.heart.episodes.service import EpisodeService

__all__ = ["EpisodeSweeper"]

_log = logging.getLogger(__name__)


class EpisodeSweeper(PollingWorker):
    """Ends idle episodes in the background until :meth:`stop`."""

    name = "memory-kernel-episode-sweeper"

    def __init__(self, service: EpisodeService, every_s: float) -> None:
        super().__init__()
        self._service = service
        self._every_s = every_s
        #: Episodes ended since start.
        self.ended = 0

    async def run_once(self) -> int:
        """One round; returns the episodes ended."""
        ended = len(await self._service.end_all_idle())
        self.ended += ended
        return ended

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self._every_s)
            try:
                await self.run_once()
            except MemoryKernelError:
                _log.exception("episode sweeper: round failed")
