"""Tenant isolation, as a property: with random memories for several agents that share
words (so every search has tempting neighbours in other agents), no public read (facts
search/history/as_of/get, episodes, decisions, ``search_memory``, the assembled context)
returns another agent's rows, no id of another agent is reachable, and no maintenance of one agent
(consolidation, pending embedding) changes another agent's rows."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import text

from memory_kernel import MemoryKernel, NotFoundError
from memory_kernel.models.context import ContextRequest
from memory_kernel.models.decisions import DecisionInput
from memory_kernel.models.episodes import EpisodeInput
from memory_kernel.models.facts import FactInput
from tests.conftest import scratch_kernel
from tests.fuzz.checks import rows_digest

WORDS = ["billing", "deploy", "postgres", "team", "release", "owner", "weekly", "service",
         "alert", "backup", "region", "latency", "budget", "review"]  # fmt: skip
sentence = st.lists(st.sampled_from(WORDS), min_size=4, max_size=9).map(
    lambda ws: "The " + " ".join(ws) + " is confirmed"
)
memories = st.lists(
    st.tuples(st.sampled_from(["fact", "pending", "episode", "decision"]), sentence),
    min_size=2, max_size=8,
)  # fmt: skip
_ROWS = rows_digest(("facts", "episodes", "decisions", "memory_events"), "WHERE agent_id = :a")


@pytest.fixture(scope="module")
async def iso_kernel(pg_dsn: str) -> AsyncIterator[MemoryKernel]:
    async with scratch_kernel(pg_dsn, "iso") as kernel:
        yield kernel


async def _rows(kernel: MemoryKernel, agent: str) -> list[tuple[Any, ...]]:
    async with kernel.database.connection() as conn:
        return [tuple(r) for r in (await conn.execute(_ROWS, {"a": agent})).all()]


async def _store(kernel: MemoryKernel, agent: str, items: list[tuple[str, str]]) -> set[uuid.UUID]:
    """Write ``items`` for ``agent``; returns the ids of everything stored."""
    ids: set[uuid.UUID] = set()
    for i, (kind, content) in enumerate(items):
        if kind in ("fact", "pending"):
            outcome = await kernel.heart.facts.learn(
                FactInput(agent_id=agent, content=content, subject=f"topic {i % 3}",
                          explicit=True, defer_embedding=kind == "pending")
            )  # fmt: skip
            ids.add(outcome.fact.id)
        elif kind == "episode":
            start = await kernel.heart.episodes.start(
                EpisodeInput(agent_id=agent, session_id="s", summary=content)
            )
            end = await kernel.heart.episodes.end(
                start.episode.id, agent_id=agent, outcome="success"
            )
            ids.add(end.episode.id)
        else:
            decision = await kernel.brain.record(
                DecisionInput(agent_id=agent, session_id="s", description=content)
            )
            ids.add(decision.id)
    return ids


async def _owner(kernel: MemoryKernel, memory_id: uuid.UUID) -> str:
    """The agent a memory id belongs to, looked up in every table."""
    async with kernel.database.connection() as conn:
        owner = await conn.scalar(
            text(
                "SELECT agent_id FROM facts WHERE id = :i UNION ALL"
                " SELECT agent_id FROM episodes WHERE id = :i UNION ALL"
                " SELECT agent_id FROM decisions WHERE id = :i LIMIT 1"
            ),
            {"i": memory_id},
        )
    return str(owner)


async def _reads(kernel: MemoryKernel, agent: str, query: str) -> set[tuple[str, uuid.UUID]]:
    """Everything the public reads return for ``agent``: (agent_id, id) pairs."""
    seen: set[tuple[str, uuid.UUID]] = set()
    for hit in await kernel.heart.facts.search(agent, query, k=50):
        seen.add((hit.fact.agent_id, hit.fact.id))
        for fact in await kernel.heart.facts.history(hit.fact.id, agent_id=agent):
            seen.add((fact.agent_id, fact.id))
    later = kernel.clock.now() + timedelta(days=1)
    for fact in await kernel.heart.facts.as_of(agent, later):
        seen.add((fact.agent_id, fact.id))
    for ep in await kernel.heart.episodes.search(agent, query, k=50):
        seen.add((ep.episode.agent_id, ep.episode.id))
    since = kernel.clock.now() - timedelta(days=1)
    for decision in await kernel.brain.get_recent_decisions(agent, since, limit=100):
        seen.add((decision.agent_id, decision.id))
    # The context engine: the agent's recall tool and a whole assembled prompt section.
    for memory in await kernel.search_memory(agent, query, limit=20):
        seen.add((await _owner(kernel, memory.id), memory.id))
    assembled = await kernel.context.build(
        ContextRequest(agent_id=agent, session_id="s", message=query)
    )
    for memory in assembled.hits:
        seen.add((await _owner(kernel, memory.id), memory.id))
    return seen


@settings(
    max_examples=int(os.environ.get("MK_ISOLATION_EXAMPLES", "4")),
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(per_agent=st.lists(memories, min_size=3, max_size=3), query=sentence)
async def test_no_read_or_maintenance_crosses_agents(
    iso_kernel: MemoryKernel, per_agent: list[list[tuple[str, str]]], query: str
) -> None:
    run = uuid.uuid4().hex[:8]
    agents = [f"{run}-{n}" for n in ("alice", "bob", "carol")]
    owned = {
        a: await _store(iso_kernel, a, items) for a, items in zip(agents, per_agent, strict=True)
    }
    for agent in agents:
        others = {a: await _rows(iso_kernel, a) for a in agents if a != agent}
        seen = await _reads(iso_kernel, agent, query)
        assert {a for a, _ in seen} <= {agent}, "a read returned another agent's row"
        await iso_kernel.consolidate(agent)
        await iso_kernel.heart.facts.embed_pending(agent)
        for other, before in others.items():
            assert await _rows(iso_kernel, other) == before, f"{agent}'s upkeep changed {other}"
            # Ids of other agents do not resolve through this agent.
            for foreign in owned[other]:
                for get in (iso_kernel.heart.facts.get, iso_kernel.heart.facts.history,
                            iso_kernel.heart.episodes.get, iso_kernel.brain.get):  # fmt: skip
                    with pytest.raises(NotFoundError):
                        await get(foreign, agent_id=agent)
