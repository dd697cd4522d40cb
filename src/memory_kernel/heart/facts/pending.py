"""The embedding queue: facts stored as ``pending_embed`` (deferred, or the embedder failed)
get their vector here and go through the checks they skipped — dedup, value change and
contradiction — against the facts that were current when they arrived and after.

A pass over one agent is a batch like ``learn_many`` (``batch_state.py``): the nearest
current facts are read a chunk at a time (pipelined), the waiting facts are decided in the
order they were learned — against the stored facts *and* the ones this pass already
settled — and everything is written in one statement (``writes.py``).
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

import numpy as np
import numpy.typing as npt
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from memory_kernel.heart.facts import repository as repo
from memory_kernel.heart.facts.batch_state import AgentState, Known, decide_pipelined, read_jobs
from memory_kernel.heart.facts.normalise import TextFeatures, features
from memory_kernel.heart.facts.policy import NewFact, plan_learn
from memory_kernel.heart.facts.relation import PairRelation, RelationThresholds, classify_pair
from memory_kernel.heart.facts.writes import Writes, apply_writes, fact_event
from memory_kernel.models.base import OutputModel
from memory_kernel.models.enums import EventKind, FactStatus
from memory_kernel.models.facts import Fact, LearnAction
from memory_kernel.runtime import Runtime
from memory_kernel.storage.events import Event
from memory_kernel.storage.tables import facts

__all__ = ["PendingReport", "embed_pending"]

Vector = npt.NDArray[np.float32]


class PendingReport(OutputModel):
    """What one ``embed_pending`` pass did."""

    embedded: int = 0  # became active
    merged: int = 0  # duplicates of a current fact: merged into it (which was reinforced)
    superseded: int = 0  # older facts retired by the newly embedded ones (or the reverse)
    contradictions: int = 0

    def __add__(self, other: PendingReport) -> PendingReport:
        return PendingReport(
            embedded=self.embedded + other.embedded,
            merged=self.merged + other.merged,
            superseded=self.superseded + other.superseded,
            contradictions=self.contradictions + other.contradictions,
        )


@dataclass(frozen=True, slots=True)
class _Waiting:
    """A pending fact with its new vector, as a batch item (``batch_state.Item``)."""

    fact: Fact
    vector: Vector
    # Its subject was settled when it was learned (a pending fact holds its subject): the
    # read looks for similar facts only, never for the fact's own row by its subject.
    subject_key: None = None

    @property
    def content(self) -> str:
        return self.fact.content

    @property
    def features(self) -> TextFeatures:
        return features(self.fact.content)


async def embed_pending(
    rt: Runtime, thresholds: RelationThresholds, *, agent_id: str | None, limit: int
) -> PendingReport:
    report = PendingReport()
    for agent in await _agents(rt, agent_id, limit):
        async with rt.db.connection() as conn:
            waiting = [repo.to_fact(r) for r in await repo.pending(conn, agent, limit)]
        if not waiting:
            continue
        # Outside the transaction: a slow embedder must not hold the agent's lock.
        vectors = await rt.embed([f.content for f in waiting])
        async with rt.db.transaction() as conn:
            await repo.lock_agents(conn, [agent])
            # Another pass, or a learn that superseded one by its subject, may have settled
            # some of them since they were read.
            still = await _still_pending(conn, agent, [f.id for f in waiting])
            items = [_Waiting(f, v) for f, v in zip(waiting, vectors, strict=True) if f.id in still]
            k, now = rt.config.heart.fact_neighbours, rt.clock.now()
            report += await _settle(conn, agent, items, thresholds, k, now)
        # The embedded facts are staged: the index worker moves them into the HNSW index.
        rt.db.staged.note("facts", [agent])
    return report


async def _agents(rt: Runtime, agent_id: str | None, limit: int) -> list[str]:
    if agent_id is not None:
        return [agent_id]
    # Maintenance listing: which agents have work, nothing of their content.
    stmt = (
        select(facts.c.agent_id)
        .where(facts.c.status == FactStatus.PENDING_EMBED.value)
        .distinct()
        .limit(limit)
    )
    async with rt.db.connection() as conn:
        return [str(a) for a in (await conn.scalars(stmt)).all()]


async def _still_pending(
    conn: AsyncConnection, agent_id: str, ids: list[uuid.UUID]
) -> set[uuid.UUID]:
    stmt = select(facts.c.id).where(
        facts.c.agent_id == agent_id,
        facts.c.id.in_(ids),
        facts.c.status == FactStatus.PENDING_EMBED.value,
    )
    return set((await conn.scalars(stmt)).all())


async def _settle(
    conn: AsyncConnection,
    agent_id: str,
    items: list[_Waiting],
    thresholds: RelationThresholds,
    k: int,
    now: datetime,
) -> PendingReport:
    """Decide ``items`` in order against their nearest current facts and write the result."""
    if not items:
        return PendingReport()
    state = AgentState(thresholds, k, capacity=len(items))
    writes = Writes()
    # Spare neighbours only when earlier items of the pass may retire some of them.
    fetch = k if len(items) == 1 else k * 2
    decided = await decide_pipelined(
        conn,
        read_jobs({agent_id: list(enumerate(items))}, len(items)),
        {agent_id: state},
        fetch,
        lambda i: _decide(i, items[i], state, writes, now),
    )
    # Every id written belongs to this agent.
    await apply_writes(conn, writes, defaultdict(lambda: agent_id), now)
    return sum(decided, PendingReport())


def _decide(
    index: int, item: _Waiting, state: AgentState, writes: Writes, now: datetime
) -> PendingReport:
    fact, mine = item.fact, item.features
    candidates = state.candidates(index, item)
    newer = [c for c in candidates if c.valid_from > fact.valid_from]
    writes.embed[fact.id] = item.vector
    # A newer fact that restates or updates this one already holds the current value.
    for cand in sorted(newer, key=lambda c: c.valid_from, reverse=True):
        verdict = classify_pair(mine, cand.features, cand.similarity or 0.0, state.t)
        if verdict.relation in (PairRelation.UPDATE, PairRelation.DUPLICATE):
            writes.supersede.append((fact.id, cand.id))
            writes.events += [
                _event(fact, EventKind.EMBEDDED, now, "embedded"),
                _event(fact, EventKind.SUPERSEDED, now, f"newer fact: {verdict.reason}",
                       related_id=cand.id),
            ]  # fmt: skip
            return PendingReport(superseded=1)
    older = [c for c in candidates if c.valid_from <= fact.valid_from]
    plan = plan_learn(NewFact(mine, fact.subject_key), older, state.t)
    if plan.action is LearnAction.REINFORCED and plan.reinforce is not None:
        writes.merge[fact.id] = plan.reinforce
        writes.reinforce[plan.reinforce] += fact.evidence_count
        writes.derived.setdefault(plan.reinforce, []).extend(fact.derived_from)
        writes.events.append(
            _event(fact, EventKind.MERGED, now, plan.reason, related_id=plan.reinforce)
        )
        return PendingReport(merged=1)
    writes.events.append(_event(fact, EventKind.EMBEDDED, now, plan.reason))
    for old in plan.supersede:
        writes.supersede.append((old.id, fact.id))
        state.retire(old.id)
        writes.events.append(
            fact_event(fact.agent_id, old.id, EventKind.SUPERSEDED, now, old.reason,
                       score=old.similarity, related_id=fact.id)
        )  # fmt: skip
    for old in plan.contradicts:
        writes.contradict += [(old.id, fact.id), (fact.id, old.id)]  # linked both ways
        writes.events.append(
            _event(fact, EventKind.CONTRADICTION, now, old.reason, related_id=old.id)
        )
    state.add_new(Known(fact.id, fact.content, fact.subject_key, fact.valid_from, item.vector))
    return PendingReport(
        embedded=1, superseded=len(plan.supersede), contradictions=len(plan.contradicts)
    )


def _event(fact: Fact, kind: EventKind, at: datetime, reason: str, **extra: object) -> Event:
    return fact_event(fact.agent_id, fact.id, kind, at, reason, **extra)
