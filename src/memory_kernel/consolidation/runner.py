"""``consolidate`` and ``consolidate_all``: per-agent runs under a Postgres advisory lock.

The lock is a session-level ``pg_try_advisory_lock`` held on a dedicated connection for the
whole of an agent's run: a second worker — in this process or on another machine — finds
the agent busy, skips it and says so in its report. No coordinator is needed, and a worker
that dies releases its locks with its connection.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncConnection

from memory_kernel.brain import Brain
from memory_kernel.consolidation import repository as repo
from memory_kernel.consolidation.gate_phase import review_band
from memory_kernel.consolidation.phases import AgentRun, ProgressCallback
from memory_kernel.errors import MemoryKernelError, ValidationError
from memory_kernel.heart.episodes.service import EpisodeService
from memory_kernel.heart.extraction.service import ExtractionService
from memory_kernel.heart.facts.service import FactService
from memory_kernel.models.consolidation import (
    AgentConsolidation,
    AgentRunStatus,
    ConsolidationPhase,
    ConsolidationProgress,
    ConsolidationReport,
)
from memory_kernel.runtime import Runtime
from memory_kernel.storage.indexer import index_staged
from memory_kernel.storage.partitions import rebalance
from memory_kernel.validation import check_agent_id

__all__ = ["Consolidator"]

_log = logging.getLogger(__name__)


class Consolidator:
    """Runs consolidation for the kernel (``kernel.consolidate`` delegates here)."""

    def __init__(
        self,
        runtime: Runtime,
        facts: FactService,
        episodes: EpisodeService | None = None,
        extraction: ExtractionService | None = None,
        brain: Brain | None = None,
    ) -> None:
        self._rt = runtime
        self._facts = facts
        self._episodes = episodes
        self._extraction = extraction
        self._brain = brain

    async def consolidate(
        self, agent_id: str, *, dry_run: bool = False, progress: ProgressCallback | None = None
    ) -> ConsolidationReport:
        """Consolidate one agent; a busy agent (another worker has it) is reported skipped."""
        check_agent_id(agent_id)
        started, t0 = self._rt.clock.now(), time.monotonic()
        result = await self._agent(agent_id, dry_run=dry_run, progress=progress)
        return ConsolidationReport(
            dry_run=dry_run, started_at=started, duration_s=time.monotonic() - t0, agents=(result,)
        )

    async def consolidate_all(
        self,
        *,
        concurrency: int | None = None,
        dry_run: bool = False,
        progress: ProgressCallback | None = None,
        agent_ids: Sequence[str] | None = None,
    ) -> ConsolidationReport:
        """Consolidate every agent with current facts or ongoing episodes, ``concurrency``
        agents at a time.

        An agent whose run fails is reported ``failed`` and the others go on. At the end,
        agents that outgrew the shared partition are promoted (``storage.partitions``).
        """
        limit = self._rt.config.consolidation.concurrency if concurrency is None else concurrency
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValidationError("concurrency must be a positive integer")
        started, t0 = self._rt.clock.now(), time.monotonic()
        if agent_ids is None:
            # Stored ids are not checked again: one written before the id policy tightened
            # (docs/integration.md, "Ids") must not stop every other agent's run.
            async with self._rt.db.connection() as conn:
                agent_ids = await repo.active_agents(conn, review_band(self._rt))
        else:
            agent_ids = [check_agent_id(a) for a in agent_ids]
        gate = asyncio.Semaphore(limit)

        async def one(agent_id: str) -> AgentConsolidation:
            async with gate:
                return await self._agent(agent_id, dry_run=dry_run, progress=progress)

        results = await asyncio.gather(*(one(a) for a in agent_ids))
        if not dry_run:
            await rebalance(self._rt.db, self._rt.clock.now())
            # Whatever the index worker has not reached yet (or all, if it is off).
            await index_staged(self._rt.db, batch=self._rt.config.storage.index_batch)
        return ConsolidationReport(
            dry_run=dry_run,
            started_at=started,
            duration_s=time.monotonic() - t0,
            agents=tuple(results),
        )

    async def _agent(
        self, agent_id: str, *, dry_run: bool, progress: ProgressCallback | None
    ) -> AgentConsolidation:
        t0 = time.monotonic()
        if progress is not None:
            progress(ConsolidationProgress(agent_id=agent_id, phase=ConsolidationPhase.LOCK))
        async with self._rt.db.connection() as lock_conn:
            if not await repo.try_lock(lock_conn, agent_id):
                return AgentConsolidation(agent_id=agent_id, status=AgentRunStatus.SKIPPED)
            try:
                return await self._locked_run(agent_id, dry_run, progress, t0)
            finally:
                await _release(lock_conn, agent_id)

    async def _locked_run(
        self, agent_id: str, dry_run: bool, progress: ProgressCallback | None, t0: float
    ) -> AgentConsolidation:
        run = AgentRun(
            self._rt, self._facts, agent_id, dry_run=dry_run, progress=progress,
            episodes=self._episodes, extraction=self._extraction, brain=self._brain,
        )  # fmt: skip
        status, errors = AgentRunStatus.DONE, run.errors
        try:
            await run.run()
        except MemoryKernelError as exc:
            _log.warning("consolidation failed", extra={"agent_id": agent_id}, exc_info=True)
            status, errors = AgentRunStatus.FAILED, [*run.errors, f"{type(exc).__name__}: {exc}"]
        else:
            if errors:  # a judge that failed, timed out or missed a check question
                _log.warning(
                    "consolidation finished with errors: %s", "; ".join(errors),
                    extra={"agent_id": agent_id},
                )  # fmt: skip
        return AgentConsolidation(
            agent_id=agent_id,
            status=status,
            counts={a: n for a, n in sorted(run.counts.items()) if n},
            judge_calls=run.judge_calls,
            facts_scanned=run.scanned,
            candidate_pairs=run.pairs,
            ambiguous=run.ambiguous,
            duration_s=time.monotonic() - t0,
            error="; ".join(errors) or None,
        )


async def _release(conn: AsyncConnection, agent_id: str) -> None:
    """Unlock; if that fails (or is cancelled), drop the connection: the server then
    releases the session's locks, and no pooled connection keeps one."""
    try:
        await repo.unlock(conn, agent_id)
    except BaseException:
        await conn.invalidate()
        raise
