"""Helpers of the consolidation tests: direct row inserts (consolidation is under test, not
the learn policy, which would refuse to store the duplicates we plant) and a scripted judge
that answers consolidation questions."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import select

from memory_kernel import MemoryKernel
from memory_kernel.consolidation.checks import check_answer
from memory_kernel.consolidation.judging import ConflictRequest
from memory_kernel.heart.facts import store as facts_store
from memory_kernel.models.facts import Fact
from memory_kernel.storage.tables import episodes, facts, memory_events
from memory_kernel.testing import ScriptedJudge


class ResolvingJudge(ScriptedJudge):
    """``ScriptedJudge`` speaking the consolidation protocol (``resolve``): it answers the
    run's check questions right (``consolidation.checks``), the others from its script."""

    async def resolve(self, requests: Sequence[ConflictRequest]) -> Sequence[Any]:
        checks = [check_answer(f.id for f in r.facts) for r in requests]
        asked = [r for r, check in zip(requests, checks, strict=True) if check is None]
        scripted = iter(await self.admit(asked))  # type: ignore[arg-type]
        return [check or next(scripted) for check in checks]


async def add_fact(
    kernel: MemoryKernel,
    agent: str,
    content: str,
    *,
    confidence: float = 0.8,
    when: datetime | None = None,
    category: str | None = None,
    subject: str | None = None,
    embed: bool = True,
    evidence_count: int = 1,
) -> uuid.UUID:
    now = when or kernel.clock.now()
    fact_id = uuid.uuid4()
    vector = (await kernel.embedder.embed([content]))[0] if embed else None
    async with kernel.database.transaction() as conn:
        await conn.execute(
            facts.insert().values(
                agent_id=agent, id=fact_id, content=content, confidence=confidence,
                category=category, subject=subject,
                subject_key=None if subject is None else subject.casefold(),
                status="active" if embed else "pending_embed", embedding=vector,
                evidence_count=evidence_count, last_evidence_at=now, valid_from=now,
                created_at=now, updated_at=now,
            )
        )  # fmt: skip
    return fact_id


async def add_episode(
    kernel: MemoryKernel, agent: str, summary: str, *, ended: datetime | None = None
) -> uuid.UUID:
    now = ended or kernel.clock.now()
    episode_id = uuid.uuid4()
    vector = (await kernel.embedder.embed([summary]))[0]
    async with kernel.database.transaction() as conn:
        await conn.execute(
            episodes.insert().values(
                agent_id=agent, id=episode_id, session_id="s", summary=summary,
                status="completed", admission="active", embedding=vector,
                started_at=now, ended_at=now, created_at=now, updated_at=now,
            )
        )  # fmt: skip
    return episode_id


async def get(kernel: MemoryKernel, agent: str, fact_id: uuid.UUID) -> Fact:
    async with kernel.database.connection() as conn:
        return (await facts_store.by_ids(conn, agent, [fact_id]))[0]


async def all_facts(kernel: MemoryKernel, agent: str) -> list[Fact]:
    async with kernel.database.connection() as conn:
        rows = await conn.execute(
            select(*facts_store.FACT_COLUMNS).where(facts.c.agent_id == agent).order_by(facts.c.id)
        )
        return [facts_store.to_fact(r) for r in rows]


async def events_of(kernel: MemoryKernel, agent: str) -> list[Any]:
    async with kernel.database.connection() as conn:
        stmt = select(memory_events).where(memory_events.c.agent_id == agent)
        return list((await conn.execute(stmt.order_by(memory_events.c.created_at))).all())


async def snapshot(kernel: MemoryKernel, agent: str) -> list[tuple[Any, ...]]:
    """Everything consolidation may change, to compare two states."""
    rows = await all_facts(kernel, agent)
    return [
        (f.id, f.status, round(f.confidence, 9), f.merged_into, f.superseded_by,
         f.evidence_count, f.derived_from, f.contradicts, f.content)
        for f in rows
    ]  # fmt: skip
