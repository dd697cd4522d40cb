"""Helpers of the episode tests: a kernel with a scripted judge, and whole runs."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest
from sqlalchemy import select

from memory_kernel import MemoryKernel
from memory_kernel.models.episodes import EpisodeEnd, EpisodeInput
from memory_kernel.storage.tables import memory_events
from memory_kernel.testing import FakeEmbedder, FrozenClock, ScriptedJudge
from tests.conftest import schema_config

#: The judge's time limit in the judged kernel: short, so the hang test is quick.
JUDGE_TIMEOUT_S = 0.3
TASK = "Generate the database schema for the orders service"


@pytest.fixture
def judge() -> ScriptedJudge:
    return ScriptedJudge()


@pytest.fixture
async def judged(
    pg_dsn: str, drop_schema: str, clock: FrozenClock, embedder: FakeEmbedder, judge: ScriptedJudge
) -> AsyncIterator[MemoryKernel]:
    """A kernel whose judge is the ``judge`` fixture."""
    config = schema_config(drop_schema, heart={"admission_judge_timeout_s": JUDGE_TIMEOUT_S})
    async with MemoryKernel.open(
        pg_dsn, config=config, clock=clock, embedder=embedder, judge=judge
    ) as kernel:
        yield kernel


async def run(
    kernel: MemoryKernel,
    outcome: str,
    *,
    summary: str = TASK,
    references: Sequence[str] = (),
    artifacts: Sequence[str] = (),
    agent: str = "a1",
) -> EpisodeEnd:
    """Start and end one run."""
    started = await kernel.heart.episodes.start(
        EpisodeInput(agent_id=agent, session_id="s1", summary=summary)
    )
    assert not started.deduplicated
    return await kernel.heart.episodes.end(
        started.episode.id,
        agent_id=agent,
        outcome=outcome,
        references=references,
        artifacts=artifacts,
    )


async def events_of(
    kernel: MemoryKernel, episode_id: uuid.UUID, agent: str = "a1"
) -> list[dict[str, Any]]:
    async with kernel.database.connection() as conn:
        rows = await conn.execute(
            select(memory_events)
            .where(memory_events.c.agent_id == agent, memory_events.c.memory_id == episode_id)
            .order_by(memory_events.c.created_at)
        )
    return [dict(r._mapping) for r in rows]


async def admission_event(kernel: MemoryKernel, episode_id: uuid.UUID) -> dict[str, Any]:
    found = [e for e in await events_of(kernel, episode_id) if e["event"].startswith("admission")]
    assert len(found) == 1
    return found[0]
