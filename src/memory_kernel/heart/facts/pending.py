"""The embedding queue: facts stored as ``pending_embed`` (deferred, or the embedder failed)
get their vector here and go through the checks they skipped — dedup, value change and
contradiction — against the facts that were current when they arrived and after."""

from __future__ import annotations

import uuid
from datetime import datetime

import numpy as np
import numpy.typing as npt
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from memory_kernel.heart.facts import repository as repo
from memory_kernel.heart.facts.normalise import features
from memory_kernel.heart.facts.policy import Candidate, NewFact, plan_learn
from memory_kernel.heart.facts.relation import PairRelation, RelationThresholds, classify_pair
from memory_kernel.models.base import OutputModel
from memory_kernel.models.enums import DecidedBy, EventKind, FactStatus, MemoryKind
from memory_kernel.models.facts import Fact, LearnAction
from memory_kernel.runtime import Runtime
from memory_kernel.storage.events import Event, write_events
from memory_kernel.storage.tables import facts

__all__ = ["PendingReport", "embed_pending"]

Vector = npt.NDArray[np.float32]


class PendingReport(OutputModel):
    """What one ``embed_pending`` pass did."""

    embedded: int = 0  # became active
    merged: int = 0  # duplicates of a current fact: merged into it (which was reinforced)
    superseded: int = 0  # older facts retired by the newly embedded ones (or the reverse)
    contradictions: int = 0


async def embed_pending(
    rt: Runtime, thresholds: RelationThresholds, *, agent_id: str | None, limit: int
) -> PendingReport:
    report = PendingReport()
    for agent in await _agents(rt, agent_id, limit):
        async with rt.db.connection() as conn:
            waiting = [repo.to_fact(r) for r in await repo.pending(conn, agent, limit)]
        if not waiting:
            continue
        vectors = await rt.embed([f.content for f in waiting])
        async with rt.db.transaction() as conn:
            saved = await repo.lock_agents(conn, [agent])
            for fact, vector in zip(waiting, vectors, strict=True):
                report = await _settle(conn, rt, thresholds, fact, vector, report)
            await repo.restore_settings(conn, saved)
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


def _event(fact: Fact, kind: EventKind, at: datetime, reason: str, **extra: object) -> Event:
    related = extra.pop("related_id", None)
    return Event(
        agent_id=fact.agent_id, kind=MemoryKind.FACT, memory_id=fact.id, event=kind,
        decided_by=DecidedBy.RULE, at=at, reason=reason,
        related_id=related if isinstance(related, uuid.UUID) else None, details=extra,
    )  # fmt: skip


async def _settle(
    conn: AsyncConnection,
    rt: Runtime,
    thresholds: RelationThresholds,
    fact: Fact,
    vector: Vector,
    report: PendingReport,
) -> PendingReport:
    """Decide one pending fact against its nearest current facts and write the result."""
    now = rt.clock.now()
    k = rt.config.heart.fact_neighbours
    rows = await repo.neighbours(conn, fact.agent_id, vector, k)
    older: list[Candidate] = []
    newer: list[Candidate] = []
    for row in rows:
        sim = 1.0 - float(row.distance)
        cand = Candidate(row.id, features(row.content), row.subject_key, sim, row.valid_from)
        (older if row.valid_from <= fact.valid_from else newer).append(cand)
    mine = features(fact.content)
    # A newer fact that restates or updates this one already holds the current value.
    for cand in sorted(newer, key=lambda c: c.valid_from, reverse=True):
        verdict = classify_pair(mine, cand.features, cand.similarity or 0.0, thresholds)
        if verdict.relation in (PairRelation.UPDATE, PairRelation.DUPLICATE):
            await _activate(conn, fact, vector, now)
            await repo.supersede(conn, fact.agent_id, [(fact.id, cand.id)], now)
            await write_events(conn, [
                _event(fact, EventKind.EMBEDDED, now, "embedded"),
                _event(fact, EventKind.SUPERSEDED, now, f"newer fact: {verdict.reason}",
                       related_id=cand.id),
            ])  # fmt: skip
            return report.model_copy(update={"superseded": report.superseded + 1})
    plan = plan_learn(NewFact(mine, fact.subject_key), older, thresholds)
    if plan.action is LearnAction.REINFORCED and plan.reinforce is not None:
        await conn.execute(
            update(facts)
            .where(facts.c.agent_id == fact.agent_id, facts.c.id == fact.id)
            .values(status=FactStatus.MERGED.value, merged_into=plan.reinforce,
                    embedding=vector, valid_to=now, updated_at=now)
        )  # fmt: skip
        await repo.reinforce(
            conn, fact.agent_id, plan.reinforce, times=fact.evidence_count, now=now,
            derived_from=fact.derived_from,
        )  # fmt: skip
        await write_events(conn, [
            _event(fact, EventKind.MERGED, now, plan.reason, related_id=plan.reinforce),
        ])  # fmt: skip
        return report.model_copy(update={"merged": report.merged + 1})
    await _activate(conn, fact, vector, now)
    await repo.supersede(conn, fact.agent_id, [(r.id, fact.id) for r in plan.supersede], now)
    links = [(r.id, fact.id) for r in plan.contradicts]
    await repo.link_contradictions(conn, fact.agent_id, links, now)
    if links:
        await conn.execute(
            update(facts)
            .where(facts.c.agent_id == fact.agent_id, facts.c.id == fact.id)
            .values(contradicts=[*fact.contradicts, *(r.id for r in plan.contradicts)])
        )
    events = [_event(fact, EventKind.EMBEDDED, now, plan.reason)]
    events += [
        Event(agent_id=fact.agent_id, kind=MemoryKind.FACT, memory_id=r.id,
              event=EventKind.SUPERSEDED, decided_by=DecidedBy.RULE, at=now, reason=r.reason,
              score=r.similarity, related_id=fact.id)
        for r in plan.supersede
    ]  # fmt: skip
    events += [
        _event(fact, EventKind.CONTRADICTION, now, r.reason, related_id=r.id)
        for r in plan.contradicts
    ]
    await write_events(conn, events)
    return report.model_copy(
        update={
            "embedded": report.embedded + 1,
            "superseded": report.superseded + len(plan.supersede),
            "contradictions": report.contradictions + len(plan.contradicts),
        }
    )


async def _activate(conn: AsyncConnection, fact: Fact, vector: Vector, now: datetime) -> None:
    await conn.execute(
        update(facts)
        .where(
            facts.c.agent_id == fact.agent_id,
            facts.c.id == fact.id,
            facts.c.status == FactStatus.PENDING_EMBED.value,
        )
        .values(status=FactStatus.ACTIVE.value, embedding=vector, updated_at=now)
    )
