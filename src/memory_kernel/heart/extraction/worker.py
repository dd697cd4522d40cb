"""The extraction queue's worker: a kernel-owned asyncio task that drains it.

Like the embedding worker (``consolidation.queue``): the queue is a table, so nothing is lost
across restarts and nothing needs a broker. The worker lists the agents with due turns,
drains each (``ExtractionService.drain``), and polls again at once while it finds work, every
``ExtractionConfig.worker_poll_s`` otherwise. A failing extractor does not stop it: the
failed turns wait out their own backoff in the queue. ``stop()`` cancels it; a cancelled
round leaves its claimed turns leased, to be claimed again after ``lease_s``.
"""

from __future__ import annotations

import asyncio
import logging

from memory_kernel.background import PollingWorker
from memory_kernel.errors import MemoryKernelError
from memory_kernel.heart.extraction.service import ExtractionService

__all__ = ["ExtractionWorker"]

_log = logging.getLogger(__name__)
# Turns one round drains at most, so a round (and a stop) never waits for a huge backlog.
_ROUND_TURNS = 1000


class ExtractionWorker(PollingWorker):
    """Drains the extraction queue in the background until :meth:`stop`."""

    name = "memory-kernel-extraction-worker"

    def __init__(self, service: ExtractionService, poll_s: float) -> None:
        super().__init__()
        self._service = service
        self._poll_s = poll_s
        #: Turns extracted since start.
        self.extracted = 0
        #: Turns whose extraction failed since start (each waits for its retry).
        self.failed = 0

    async def run_once(self) -> int:
        """One round over every agent with due turns; returns the turns extracted."""
        report = await self._service.drain(limit=_ROUND_TURNS)
        self.extracted += report.turns
        self.failed += report.failed
        return report.turns

    async def _loop(self) -> None:
        while True:
            try:
                extracted = await self.run_once()
            except MemoryKernelError:
                _log.exception("extraction worker: round failed")
                extracted = 0
            if not extracted:
                await asyncio.sleep(self._poll_s)
