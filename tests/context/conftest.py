"""Fixtures of the context tests: an engine on the test kernel, and direct row inserts (the
engine is under test here, not the learn/admission policies of the services)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

import pytest

from memory_kernel import MemoryKernel
from memory_kernel.context.engine import ContextEngine
from memory_kernel.runtime import Runtime
from memory_kernel.storage.tables import decisions, episodes, facts
from tests.statements import count_statements

__all__ = ["add_decision", "add_episode", "add_fact", "count_statements", "runtime_of"]


def runtime_of(kernel: MemoryKernel) -> Runtime:
    return Runtime(
        db=kernel.database, embedder=kernel.embedder, clock=kernel.clock, config=kernel.config
    )


@pytest.fixture
async def engine(kernel: MemoryKernel) -> Any:
    built = ContextEngine(runtime_of(kernel))
    yield built
    await built.close()


async def _vector(kernel: MemoryKernel, text: str) -> Any:
    return (await kernel.embedder.embed([text]))[0]


async def add_fact(
    kernel: MemoryKernel,
    agent: str,
    content: str,
    *,
    confidence: float = 0.8,
    when: datetime | None = None,
    embed: bool = True,
    metadata: dict[str, Any] | None = None,
) -> uuid.UUID:
    now = when or kernel.clock.now()
    fact_id = uuid.uuid4()
    async with kernel.database.transaction() as conn:
        await conn.execute(
            facts.insert().values(
                agent_id=agent,
                id=fact_id,
                content=content,
                confidence=confidence,
                status="active" if embed else "pending_embed",
                embedding=await _vector(kernel, content) if embed else None,
                last_evidence_at=now,
                valid_from=now,
                created_at=now,
                updated_at=now,
                metadata=metadata or {},
            )
        )
    return fact_id


async def add_episode(
    kernel: MemoryKernel, agent: str, summary: str, *, when: datetime | None = None
) -> uuid.UUID:
    now = when or kernel.clock.now()
    episode_id = uuid.uuid4()
    async with kernel.database.transaction() as conn:
        await conn.execute(
            episodes.insert().values(
                agent_id=agent,
                id=episode_id,
                session_id="s-old",
                summary=summary,
                status="completed",
                admission="active",
                embedding=await _vector(kernel, summary),
                started_at=now,
                ended_at=now,
                created_at=now,
                updated_at=now,
            )
        )
    return episode_id


async def add_decision(
    kernel: MemoryKernel, agent: str, description: str, *, when: datetime | None = None
) -> uuid.UUID:
    now = when or kernel.clock.now()
    decision_id = uuid.uuid4()
    async with kernel.database.transaction() as conn:
        await conn.execute(
            decisions.insert().values(
                agent_id=agent,
                id=decision_id,
                session_id="s-old",
                description=description,
                confidence=0.8,
                stakes="medium",
                embedding=await _vector(kernel, description),
                created_at=now,
                updated_at=now,
            )
        )
    return decision_id
