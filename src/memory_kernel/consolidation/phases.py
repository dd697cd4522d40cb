"""One agent's consolidation, phase by phase, each write in a small transaction.

Every phase is idempotent (it reads the current state and only writes what is still to
do), so an interrupted run leaves a consistent database and the next run resumes it.
Writes take the agent's fact lock (``mk-facts:<agent>``, the lock ``learn`` takes) per
transaction, so a learn waits for at most one batch. A dry run runs the same phases on one
transaction that is rolled back (``Database.rehearse``). The phases live in their own modules:
``confidence_phase`` (evidence, decay), ``merge_phase`` (candidates, plan, judge) and
``write_phase`` (apply, deprecate), ``vectors_phase`` (vectors an outage left out),
``gate_phase`` (a judge reads layer 1's uncertain band again); this one
drains the queue, promotes, and runs them.
"""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

from sqlalchemy import func, select, text

from memory_kernel.brain import Brain
from memory_kernel.cognitive import turn_results
from memory_kernel.consolidation.apply import Unit
from memory_kernel.consolidation.confidence_phase import run_confidence
from memory_kernel.consolidation.context import ProgressCallback, RunContext
from memory_kernel.consolidation.gate_phase import review_gate
from memory_kernel.consolidation.merge_phase import decide
from memory_kernel.consolidation.vectors_phase import fill_vectors
from memory_kernel.consolidation.write_phase import apply_all, deprecate_all
from memory_kernel.errors import EmbedderError
from memory_kernel.heart.episodes.service import EpisodeService
from memory_kernel.heart.extraction.service import ExtractionService
from memory_kernel.heart.facts.service import FactService
from memory_kernel.models.consolidation import ConsolidationAction as Action
from memory_kernel.models.consolidation import ConsolidationPhase as Phase
from memory_kernel.runtime import Runtime
from memory_kernel.storage.partitions import promote_agent
from memory_kernel.storage.tables import PARTITIONED_TABLES, agent_partitions, facts

__all__ = ["AgentRun", "ProgressCallback"]

# Pending-queue rounds per run: a bound, in case facts keep arriving while it drains.
_MAX_PENDING_ROUNDS = 1000
# Queued turns one run extracts at most (turns may keep arriving while it drains).
_MAX_EXTRACTED = 100_000


class AgentRun:
    """The state of one agent's run; :meth:`run` does the phases in order."""

    def __init__(
        self,
        rt: Runtime,
        facts_service: FactService,
        agent_id: str,
        *,
        dry_run: bool,
        progress: ProgressCallback | None,
        episodes: EpisodeService | None = None,
        extraction: ExtractionService | None = None,
        brain: Brain | None = None,
    ) -> None:
        self.rt, self.facts, self.agent_id, self.dry_run = rt, facts_service, agent_id, dry_run
        self.episodes, self.extraction, self.brain = episodes, extraction, brain
        self.ctx = RunContext(
            rt, facts_service, agent_id, dry_run=dry_run, progress=progress, now=rt.clock.now()
        )

    # The report's figures (the runner reads them, also after a failure).
    @property
    def counts(self) -> Counter[Action]:
        return self.ctx.counts

    @property
    def errors(self) -> list[str]:
        return self.ctx.errors

    @property
    def judge_calls(self) -> int:
        return self.ctx.judge_calls

    @property
    def scanned(self) -> int:
        return self.ctx.scanned

    @property
    def pairs(self) -> int:
        return self.ctx.pairs

    @property
    def ambiguous(self) -> int:
        return self.ctx.ambiguous

    async def run(self) -> None:
        await self._extract()
        await self._prune_turn_results()
        await self._end_idle_episodes()
        if not self.dry_run:
            await self._phases()
            return
        # The same phases in one transaction that is rolled back (``Database.rehearse``):
        # each phase sees what the earlier ones wrote, so the report is the real run's.
        async with self.rt.db.rehearse():
            await self._phases()

    async def _phases(self) -> None:
        await self._drain_pending()
        await fill_vectors(self.ctx)
        await review_gate(self.ctx, self.brain)
        if not self.dry_run:  # storage layout only: it changes no count
            await self._promote()
        await self._confidence()
        await self._apply(await decide(self.ctx))
        await self._deprecate()
        self.ctx.report(Phase.DONE)

    async def _confidence(self) -> None:
        await run_confidence(self.ctx)

    async def _apply(self, units: list[Unit]) -> None:
        await apply_all(self.ctx, units)

    async def _deprecate(self) -> None:
        await deprecate_all(self.ctx)

    # -- fact extraction -------------------------------------------------------------------

    async def _extract(self) -> None:
        """The agent's queued turns first, so the night's passes see their facts. A dry run
        leaves the queue alone (an extractor call may be a paid model request). A failing
        extractor is reported; its turns stay queued for a retry."""
        if self.extraction is None or self.dry_run:
            return
        self.ctx.report(Phase.EXTRACTION)
        done = await self.extraction.drain_agent(self.agent_id, limit=_MAX_EXTRACTED)
        self.counts[Action.EXTRACTED] += done.turns
        self.ctx.errors += [f"fact extraction failed: {e}" for e in done.errors]

    async def _prune_turn_results(self) -> None:
        """Results of turns recorded longer ago than ``turn_results_days`` go (post_turn
        refuses such old handles, so no repeat can record them twice)."""
        if self.dry_run:
            return
        before = self.ctx.now - timedelta(days=self.ctx.cfg.turn_results_days)
        async with self.rt.db.transaction() as conn:
            pruned = await turn_results.prune(conn, agent_id=self.agent_id, before=before)
        self.counts[Action.TURN_RESULTS_PRUNED] += pruned

    # -- idle episodes -----------------------------------------------------------------------

    async def _end_idle_episodes(self) -> None:
        """Episodes idle for ``episode_idle_end_s`` end (summary from their turns, admission)
        first, so this run already sees them. A dry run only counts them: an end embeds its
        summary and may ask a judge, which a rehearsal's one transaction must not wait on."""
        if self.episodes is None:
            return
        self.ctx.report(Phase.EPISODES)
        if self.dry_run:
            self.counts[Action.EPISODES_ENDED] += await self.episodes.count_idle(self.agent_id)
            return
        ended = await self.episodes.end_idle(self.agent_id)
        self.counts[Action.EPISODES_ENDED] += len(ended)

    # -- pending embeddings ----------------------------------------------------------------

    async def _drain_pending(self) -> None:
        ctx = self.ctx
        ctx.report(Phase.PENDING)
        batch = ctx.cfg.pending_batch
        for _ in range(_MAX_PENDING_ROUNDS):
            try:
                done = await self.facts.embed_pending(self.agent_id, limit=batch)
            except EmbedderError as exc:
                # Still findable by text; the queue retries when the embedder is back.
                ctx.errors.append(f"pending facts not embedded: {exc}")
                return
            ctx.counts[Action.EMBEDDED] += done.embedded
            ctx.counts[Action.MERGED] += done.merged
            ctx.counts[Action.SUPERSEDED] += done.superseded
            ctx.report(Phase.PENDING, done=ctx.counts[Action.EMBEDDED])
            if done.embedded + done.merged + done.superseded < batch:
                return

    async def _promote(self) -> None:
        """An agent that outgrew the shared partition gets its own HNSW partition first, so
        this run's neighbour searches use an index instead of scanning."""
        threshold = self.rt.db.config.dedicated_partition_rows
        for table_name in PARTITIONED_TABLES:
            async with self.rt.db.connection() as conn:
                has_own = await conn.scalar(
                    select(agent_partitions.c.partition_name).where(
                        agent_partitions.c.agent_id == self.agent_id,
                        agent_partitions.c.table_name == table_name,
                    )
                )
                if has_own is not None:
                    continue
                table = facts.metadata.tables[table_name]
                rows = await conn.scalar(
                    select(func.count()).select_from(table).where(table.c.agent_id == self.agent_id)
                )
            if int(rows or 0) <= threshold:
                continue
            async with self.rt.db.transaction() as conn:
                await conn.execute(text("SET LOCAL maintenance_work_mem = '256MB'"))
                await promote_agent(
                    conn, table_name, self.agent_id, self.rt.db.config, self.ctx.now
                )
