"""One agent's consolidation, phase by phase, each write in a small transaction.

Every phase is idempotent (it reads the current state and only writes what is still to
do), so an interrupted run leaves a consistent database and the next run resumes it.
Writes take the agent's fact lock (``mk-facts:<agent>``, the lock ``learn`` takes) per
transaction, so a learn waits for at most one batch.
"""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import datetime
from typing import Any

import numpy as np
from sqlalchemy import select, text, update
from sqlalchemy.ext.asyncio import AsyncConnection

from memory_kernel.consolidation import repository as repo
from memory_kernel.consolidation.apply import MergeUnit, Unit, apply_units
from memory_kernel.consolidation.candidates import IvfParams, VectorStore, candidate_pairs
from memory_kernel.consolidation.judging import ask_judge, can_judge
from memory_kernel.consolidation.plans import FactView, MergeRules, Pair, PairPlan, plan_pairs
from memory_kernel.consolidation.policy import (
    ConfidenceChange,
    ConfidenceRules,
    Evidence,
    plan_confidence,
)
from memory_kernel.consolidation.resolve import (
    Case,
    cap_cases,
    judge_cases,
    rule_units,
    verdict_units,
)
from memory_kernel.errors import EmbedderError
from memory_kernel.heart.facts import repository as facts_repo
from memory_kernel.heart.facts.service import FactService
from memory_kernel.models.consolidation import ConsolidationAction as Action
from memory_kernel.models.consolidation import ConsolidationPhase as Phase
from memory_kernel.models.consolidation import ConsolidationProgress
from memory_kernel.models.enums import DecidedBy, EventKind, FactStatus, MemoryKind
from memory_kernel.runtime import Runtime
from memory_kernel.storage.events import Event, write_events
from memory_kernel.storage.partitions import promote_agent
from memory_kernel.storage.tables import PARTITIONED_TABLES, agent_partitions, facts

__all__ = ["AgentRun", "ProgressCallback"]

ProgressCallback = Callable[[ConsolidationProgress], None]
_ZERO = uuid.UUID(int=0)
# Pending-queue rounds per run: a bound, in case facts keep arriving while it drains.
_MAX_PENDING_ROUNDS = 1000


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
    ) -> None:
        self.rt, self.facts, self.agent_id = rt, facts_service, agent_id
        self.dry_run, self._progress = dry_run, progress
        self.cfg = rt.config.consolidation
        self.now: datetime = rt.clock.now()
        self.counts: Counter[Action] = Counter()
        self.judge_calls = 0
        self.scanned = 0
        self.pairs = 0
        self.ambiguous = 0
        self.errors: list[str] = []

    def report(self, phase: Phase, done: int = 0, total: int = 0) -> None:
        if self._progress is not None:
            self._progress(
                ConsolidationProgress(agent_id=self.agent_id, phase=phase, done=done, total=total)
            )

    async def run(self) -> None:
        await self._drain_pending()
        if not self.dry_run:
            await self._promote()
        await self._confidence()
        plan, views, penalised = await self._candidates()
        units = rule_units(plan)
        units += await self._judge(plan, views, penalised)
        await self._apply(units)
        await self._deprecate()
        self.report(Phase.DONE)

    # -- pending embeddings ----------------------------------------------------------------

    async def _drain_pending(self) -> None:
        self.report(Phase.PENDING)
        if self.dry_run:
            async with self.rt.db.connection() as conn:
                waiting = await conn.scalar(
                    select(text("count(*)"))
                    .select_from(facts)
                    .where(
                        facts.c.agent_id == self.agent_id,
                        facts.c.status == FactStatus.PENDING_EMBED.value,
                    )
                )
            self.counts[Action.EMBEDDED] += int(waiting or 0)
            return
        for _ in range(_MAX_PENDING_ROUNDS):
            try:
                done = await self.facts.embed_pending(self.agent_id, limit=self.cfg.pending_batch)
            except EmbedderError as exc:
                # Still findable by text; the queue retries when the embedder is back.
                self.errors.append(f"pending facts not embedded: {exc}")
                return
            self.counts[Action.EMBEDDED] += done.embedded
            self.counts[Action.MERGED] += done.merged
            self.counts[Action.SUPERSEDED] += done.superseded
            settled = done.embedded + done.merged + done.superseded
            self.report(Phase.PENDING, done=self.counts[Action.EMBEDDED])
            if settled < self.cfg.pending_batch:
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
                    select(text("count(*)"))
                    .select_from(table)
                    .where(table.c.agent_id == self.agent_id)
                )
            if int(rows or 0) <= threshold:
                continue
            async with self.rt.db.transaction() as conn:
                await conn.execute(text("SET LOCAL maintenance_work_mem = '256MB'"))
                await promote_agent(conn, table_name, self.agent_id, self.rt.db.config, self.now)

    # -- confidence: evidence + decay ------------------------------------------------------

    def _rules(self) -> ConfidenceRules:
        ctx = self.rt.config.context
        tiers = {ctx.passive_min_confidence, ctx.active_min_confidence, self.cfg.deprecate_below}
        return ConfidenceRules(
            decay_per_day=self.cfg.decay_per_day,
            min_change=self.cfg.decay_min_change,
            deprecate_below=self.cfg.deprecate_below,
            tiers=tuple(sorted(tiers)),
        )

    async def _evidence(self) -> dict[uuid.UUID, Evidence]:
        """Supporting episodes per fact: each completed episode searches its nearest facts
        (episodes are far fewer than facts, and most are old news to every fact)."""
        found: dict[uuid.UUID, list[tuple[uuid.UUID, datetime]]] = {}
        async with self.rt.db.connection() as conn:
            since = await repo.oldest_evidence(conn, self.agent_id)
            if since is None:
                return {}
            await repo.set_ef_search(conn, self.cfg.evidence_ef_search)
            after = _ZERO
            while ids := await repo.episode_page(
                conn, self.agent_id, since=since, after=after, limit=self.cfg.batch_size
            ):
                for fact_id, episode_id, ended in await repo.evidence_pairs(
                    conn, self.agent_id, ids, k=self.cfg.evidence_neighbours,
                    min_similarity=self.cfg.evidence_similarity,
                ):  # fmt: skip
                    found.setdefault(fact_id, []).append((episode_id, ended))
                after = ids[-1]
        return {f: _evidence_of(eps) for f, eps in found.items()}

    async def _confidence(self) -> None:
        self.report(Phase.CONFIDENCE)
        evidence = await self._evidence()
        rules, after = self._rules(), _ZERO
        while True:
            async with self._unit_of_work() as conn:
                page = await repo.confidence_page(
                    conn, self.agent_id, after=after, limit=self.cfg.batch_size
                )
                if not page:
                    return
                planned = [plan_confidence(s, evidence.get(s.id), self.now, rules) for s in page]
                changes = [c for c in planned if c is not None]
                if not self.dry_run:
                    await repo.write_confidence(conn, self.agent_id, changes, self.now)
                    await write_events(conn, [self._confidence_event(c) for c in changes])
            self._count_confidence(changes, page, rules)
            self.scanned += len(page)
            after = page[-1].id
            self.report(Phase.CONFIDENCE, done=self.scanned)

    def _count_confidence(
        self, changes: Sequence[ConfidenceChange], page: Sequence[Any], rules: ConfidenceRules
    ) -> None:
        for change in changes:
            self.counts[Action.REINFORCED if change.evidence else Action.DECAYED] += 1
        if self.dry_run:  # what the deprecation phase would find
            final = {s.id: s.confidence for s in page} | {c.id: c.after for c in changes}
            self.counts[Action.DEPRECATED] += sum(v < rules.deprecate_below for v in final.values())

    def _confidence_event(self, change: ConfidenceChange) -> Event:
        details: dict[str, Any] = {"before": change.before, "after": change.after,
                                   "decay_days": round(change.decay_days, 4)}  # fmt: skip
        if change.evidence:
            details["episodes"] = [str(e) for e in change.evidence]
        return Event(
            agent_id=self.agent_id, kind=MemoryKind.FACT, memory_id=change.id,
            event=EventKind.REINFORCED if change.evidence else EventKind.CONFIDENCE_CHANGED,
            decided_by=DecidedBy.RULE, at=self.now, reason=change.reason, score=change.after,
            details=details,
        )  # fmt: skip

    @asynccontextmanager
    async def _locked(self) -> AsyncIterator[AsyncConnection]:
        """A transaction holding the agent's fact lock (the one ``learn`` takes)."""
        async with self.rt.db.transaction() as conn:
            await facts_repo.lock_agents(conn, [self.agent_id])
            yield conn

    def _unit_of_work(self) -> AbstractAsyncContextManager[AsyncConnection]:
        return self.rt.db.connection() if self.dry_run else self._locked()

    # -- candidates and plan ---------------------------------------------------------------

    async def _candidates(
        self,
    ) -> tuple[PairPlan, dict[uuid.UUID, FactView], frozenset[tuple[uuid.UUID, uuid.UUID]]]:
        self.report(Phase.CANDIDATES)
        found = {pair.key: pair for pair in await self._nearest_pairs()}
        async with self.rt.db.connection() as conn:
            for pair in await repo.linked_pairs(conn, self.agent_id):
                found.setdefault(pair.key, pair)
            penalised = await repo.penalised_pairs(conn, self.agent_id)
            ids = list({i for key in found for i in key})
            views = await repo.fact_views(conn, self.agent_id, ids)
        self.pairs = len(found)
        pairs = [p for p in found.values() if p.a in views and p.b in views]
        rules = MergeRules(
            merge_similarity=self.cfg.merge_similarity,
            merge_min_confidence=self.cfg.merge_min_confidence,
            ambiguous_similarity=self.cfg.ambiguous_similarity,
            contradiction_similarity=self.cfg.contradiction_similarity,
        )
        plan = plan_pairs(pairs, views, rules, self.facts.thresholds(), penalised=penalised)
        return plan, views, penalised

    async def _nearest_pairs(self) -> list[Pair]:
        """Stream the agent's vectors (keyset pages) and search neighbours in memory."""
        heart = self.rt.config.heart
        after = _ZERO
        async with self.rt.db.connection() as conn:
            store = VectorStore(
                self.rt.embedder.dim, await repo.searchable_count(conn, self.agent_id)
            )
            while True:
                ids, vectors = await repo.vector_page(
                    conn, self.agent_id, after=after, limit=self.cfg.batch_size * 10
                )
                if not ids:
                    break
                store.add(ids, np.stack(vectors).astype(np.float32))
                after = ids[-1]
                self.report(Phase.CANDIDATES, done=len(store.ids))
        params = IvfParams(
            k=self.cfg.neighbours,
            floor=min(heart.fact_contradiction_similarity, self.cfg.ambiguous_similarity),
            cell_size=self.cfg.candidate_cell_size,
            probes=self.cfg.candidate_probes,
        )
        # CPU-bound numpy work: off the event loop, so other agents' runs and the host go on.
        return await asyncio.to_thread(candidate_pairs, store, params)

    # -- judge -----------------------------------------------------------------------------

    async def _judge(
        self,
        plan: PairPlan,
        views: dict[uuid.UUID, FactView],
        penalised: frozenset[tuple[uuid.UUID, uuid.UUID]],
    ) -> list[Unit]:
        conflicts, merges = judge_cases(plan)
        self.ambiguous = len(conflicts) + len(merges)
        judge = self.rt.judge if can_judge(self.rt.judge) and not self.dry_run else None
        units: list[Unit] = []
        calls_left = self.cfg.judge_max_calls
        for cases in (conflicts, merges):
            if not cases:
                continue
            if judge is None or calls_left == 0:
                self.counts[Action.KEPT_BOTH] += len(cases)
                if judge is not None:
                    self.counts[Action.JUDGE_FALLBACK] += len(cases)
                continue
            calls_left -= 1
            units += await self._ask(judge, cases, views, penalised)
        return units

    async def _ask(
        self,
        judge: object,
        cases: list[Case],
        views: dict[uuid.UUID, FactView],
        penalised: frozenset[tuple[uuid.UUID, uuid.UUID]],
    ) -> list[Unit]:
        self.report(Phase.JUDGE, total=len(cases))
        asked, overflow = cap_cases(cases, self.cfg.judge_max_items)
        requests = [c.request(self.agent_id, views) for c in asked]
        answers = await ask_judge(judge, requests, timeout_s=self.cfg.judge_timeout_s)
        self.judge_calls += int(answers.called)
        if answers.error:
            self.errors.append(answers.error)
        units: list[Unit] = []
        fallbacks = len(overflow)
        for case, verdict in zip(asked, answers.verdicts, strict=True):
            decided = None if verdict is None else verdict_units(
                case, verdict, views, self.facts.thresholds(), penalised=penalised
            )  # fmt: skip
            if decided is None:
                fallbacks += 1
            elif not decided:
                self.counts[Action.KEPT_BOTH] += 1
            units += decided or []
        # The rule decision for an ambiguous case is to change nothing.
        self.counts[Action.JUDGE_FALLBACK] += fallbacks
        self.counts[Action.KEPT_BOTH] += fallbacks
        return units

    # -- apply -----------------------------------------------------------------------------

    async def _apply(self, units: list[Unit]) -> None:
        self.report(Phase.APPLY, total=len(units))
        if self.dry_run:
            for unit in units:
                if isinstance(unit, MergeUnit):
                    self.counts[Action.MERGED] += len(unit.losers)
                else:
                    self.counts[Action.CONTRADICTION] += 1
            return
        units = await self._embed_new_contents(units)
        size = self.cfg.batch_size
        for start in range(0, len(units), size):
            async with self._locked() as conn:
                counts, events, _ = await apply_units(
                    conn, self.agent_id, units[start : start + size], self.now
                )
                await write_events(conn, events)
            self.counts.update(counts)
            self.report(Phase.APPLY, done=min(start + size, len(units)), total=len(units))

    async def _embed_new_contents(self, units: list[Unit]) -> list[Unit]:
        """Vectors for contents a merge rewrote; without the embedder they wait as pending."""
        rewritten = [u for u in units if isinstance(u, MergeUnit) and u.new_content]
        if not rewritten:
            return units
        try:
            vectors = await self.rt.embed([str(u.new_content) for u in rewritten])
        except EmbedderError as exc:
            self.errors.append(f"merged contents left pending: {exc}")
            return units
        by_unit = {id(u): v for u, v in zip(rewritten, vectors, strict=True)}
        return [
            dataclasses.replace(u, new_vector=by_unit[id(u)]) if id(u) in by_unit else u
            for u in units
        ]

    # -- deprecation -----------------------------------------------------------------------

    async def _deprecate(self) -> None:
        self.report(Phase.DEPRECATE)
        if self.dry_run:
            return
        while True:
            async with self._locked() as conn:
                rows = (await conn.execute(
                    select(facts.c.id, facts.c.confidence)
                    .where(facts.c.agent_id == self.agent_id,
                           facts.c.status == FactStatus.ACTIVE.value,
                           facts.c.confidence < self.cfg.deprecate_below)
                    .order_by(facts.c.id).limit(self.cfg.batch_size).with_for_update()
                )).all()  # fmt: skip
                if not rows:
                    return
                await conn.execute(
                    update(facts)
                    .where(facts.c.agent_id == self.agent_id, facts.c.id.in_([r.id for r in rows]))
                    .values(status=FactStatus.DEPRECATED.value, valid_to=self.now,
                            updated_at=self.now)
                )  # fmt: skip
                await write_events(conn, [self._deprecated_event(r.id, r.confidence) for r in rows])
            self.counts[Action.DEPRECATED] += len(rows)

    def _deprecated_event(self, fact_id: uuid.UUID, confidence: float) -> Event:
        return Event(
            agent_id=self.agent_id, kind=MemoryKind.FACT, memory_id=fact_id,
            event=EventKind.DEPRECATED, decided_by=DecidedBy.RULE, at=self.now,
            reason=f"confidence {confidence:.3f} below {self.cfg.deprecate_below}",
            score=confidence,
        )  # fmt: skip


def _evidence_of(episodes: list[tuple[uuid.UUID, datetime]]) -> Evidence:
    ordered = sorted(episodes, key=lambda e: e[1])
    return Evidence(tuple(e for e, _ in ordered), ordered[-1][1])
