"""An agent's facts and fact events in a form two agents can be compared by (ids differ)."""

from __future__ import annotations

from collections import Counter

from sqlalchemy import select

from memory_kernel import MemoryKernel
from memory_kernel.storage.tables import facts, memory_events


async def fact_rows(kernel: MemoryKernel, agent: str) -> list[tuple[object, ...]]:
    """Every row of the agent, with fact ids replaced by contents (ids differ per agent)."""
    async with kernel.database.connection() as conn:
        rows = (await conn.execute(select(facts).where(facts.c.agent_id == agent))).all()
    content = {r.id: r.content for r in rows}
    return sorted(
        (
            r.content, r.status, r.evidence_count, round(r.confidence, 9),
            content.get(r.superseded_by), content.get(r.merged_into),
            tuple(sorted(content[c] for c in r.contradicts)),
            tuple(str(d) for d in r.derived_from), r.valid_to is not None,
            r.embedding is not None,
        )
        for r in rows
    )  # fmt: skip


async def fact_events(kernel: MemoryKernel, agent: str) -> Counter[tuple[str, str, str | None]]:
    async with kernel.database.connection() as conn:
        rows = (
            await conn.execute(
                select(memory_events.c.event, facts.c.content, memory_events.c.related_id)
                .join(facts, (facts.c.id == memory_events.c.memory_id)
                      & (facts.c.agent_id == memory_events.c.agent_id))
                .where(memory_events.c.agent_id == agent)
            )
        ).all()  # fmt: skip
        related = dict(
            (
                await conn.execute(
                    select(facts.c.id, facts.c.content).where(facts.c.agent_id == agent)
                )
            ).all()
        )
    return Counter((r.event, r.content, related.get(r.related_id)) for r in rows)
