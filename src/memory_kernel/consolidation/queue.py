"""The embedding queue's worker: a kernel-owned asyncio task that embeds pending facts.

The queue is the facts table (``status = 'pending_embed'``), so nothing is lost across
restarts and nothing needs a broker. The worker polls for agents with pending facts older
than a short grace period (so bursts are embedded in one batch), settles them through
``FactService.embed_pending`` (dedup, value change and contradiction checks included) and
backs off exponentially while the embedder fails. ``stop()`` cancels it; a cancelled round
rolls its transaction back, so the facts simply stay pending.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import timedelta

from sqlalchemy import select

from memory_kernel.background import PollingWorker
from memory_kernel.errors import EmbedderError, MemoryKernelError
from memory_kernel.heart.facts.service import FactService
from memory_kernel.models.enums import FactStatus
from memory_kernel.runtime import Runtime
from memory_kernel.storage.tables import facts

__all__ = ["EmbeddingWorker"]

_log = logging.getLogger(__name__)
# Agents served per poll: bounds one round; the rest are served by the next rounds.
_AGENTS_PER_ROUND = 100


class EmbeddingWorker(PollingWorker):
    """Embeds ``pending_embed`` facts in the background until :meth:`stop`."""

    name = "memory-kernel-embedding-worker"

    def __init__(self, runtime: Runtime, facts_service: FactService) -> None:
        super().__init__()
        self._wake = asyncio.Event()
        self._rt = runtime
        self._facts = facts_service
        #: Facts settled since start (embedded, merged or superseded).
        self.settled = 0
        #: Consecutive embedder failures (0 when healthy).
        self.failures = 0

    def wake(self) -> None:
        """Poll now instead of at the next interval (e.g. after a burst of deferred facts)."""
        self._wake.set()

    async def run_once(self) -> int:
        """One round: settle the pending facts of agents that have waited long enough.
        Returns how many facts were settled; raises ``EmbedderError`` if the embedder fails."""
        cfg = self._rt.config.consolidation
        cutoff = self._rt.clock.now() - timedelta(seconds=cfg.embed_worker_grace_s)
        stmt = (
            select(facts.c.agent_id)
            .where(
                facts.c.status == FactStatus.PENDING_EMBED.value,
                facts.c.created_at <= cutoff,
            )
            .distinct()
            .limit(_AGENTS_PER_ROUND)
        )
        async with self._rt.db.connection() as conn:
            agents = [str(a) for a in (await conn.scalars(stmt)).all()]
        settled = 0
        for agent_id in agents:
            report = await self._facts.embed_pending(agent_id, limit=cfg.pending_batch)
            settled += report.embedded + report.merged + report.superseded
        self.settled += settled
        return settled

    async def _loop(self) -> None:
        cfg = self._rt.config.consolidation
        delay = cfg.embed_worker_poll_s
        while True:
            try:
                settled = await self.run_once()
                self.failures, delay = 0, cfg.embed_worker_poll_s
            except EmbedderError as exc:
                self.failures += 1
                delay = min(
                    cfg.embed_worker_backoff_max_s, cfg.embed_worker_poll_s * 2**self.failures
                )
                _log.warning("embedding worker: embedder failed (%s); retry in %.1fs", exc, delay)
                settled = 0
            except MemoryKernelError:
                _log.exception("embedding worker: round failed")
                settled = 0
            if settled:
                continue  # more may be waiting: drain before sleeping
            await self._sleep(delay)

    async def _sleep(self, seconds: float) -> None:
        self._wake.clear()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await self._wake.wait()
