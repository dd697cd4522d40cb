"""``erase_agent`` on a real PostgreSQL: every row the agent has goes, its own partitions
are dropped and forgotten, no other agent loses anything, and the id can start afresh."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from memory_kernel import FactInput, MemoryKernel, ValidationError
from memory_kernel.models.turns import ToolResult
from memory_kernel.storage.partitions import partition_name
from tests.conftest import open_promotable, promote
from tests.erasure.conftest import exchange, rows

GONE, STAYS = "agent-gone", "agent-stays"
DECISION = (
    "We'll use PostgreSQL with pgvector rather than a separate vector database, because it "
    "keeps transactions and embeddings in one place."
)


async def _fill(kernel: MemoryKernel, agent: str) -> None:
    """A row in every table an agent has rows in."""
    remember = ToolResult(tool_name="remember", arguments={"content": "The user's pin is 2580."})
    await exchange(kernel, agent, "My city is Paris.", tool_results=[remember])
    await exchange(kernel, agent, "How should we store embeddings?", DECISION, frame="decision")
    await kernel.heart.facts.learn(FactInput(agent_id=agent, content="Spec 7 is planned"))
    await kernel.end_session(agent, "s1")
    await exchange(kernel, agent, "My dog is Rex.", session="s2")  # queued, not extracted


async def test_every_row_of_the_agent_goes_and_no_other_agents(ekernel: MemoryKernel) -> None:
    for agent in (GONE, STAYS):
        await _fill(ekernel, agent)
    full = await rows(ekernel, GONE)
    assert all(full.values()), full  # the test covers every table
    others = await rows(ekernel, STAYS)

    report = await ekernel.erase_agent(GONE)

    assert await rows(ekernel, GONE) == dict.fromkeys(full, 0)
    assert await rows(ekernel, STAYS) == others
    assert (report.facts, report.episodes, report.turns, report.decisions) == (
        full["facts"], full["episodes"], full["turns"], full["decisions"]
    )  # fmt: skip
    assert report.events == full["memory_events"]
    assert report.bookkeeping == full["turn_results"] + full["extraction_queue"]
    assert report.partitions == 0
    assert await ekernel.search_memory(GONE, "Paris", search_type="all") == []
    # The id starts afresh.
    ctx, _ = await exchange(ekernel, GONE, "Hello again, my city is Rome.")
    assert "Paris" not in ctx.text
    assert (await rows(ekernel, GONE))["turns"] == 2


async def test_an_agent_nobody_knows_erases_nothing(kernel: MemoryKernel) -> None:
    report = await kernel.erase_agent("nobody")
    assert report.memories == 0 and report.partitions == 0
    with pytest.raises(ValidationError):
        await kernel.erase_agent("two words")


async def test_its_own_partitions_are_dropped_and_forgotten(pg_dsn: str, drop_schema: str) -> None:
    kernel = await open_promotable(pg_dsn, drop_schema, index_worker=False)
    try:
        await kernel.heart.facts.learn(FactInput(agent_id=STAYS, content="Spec 7 is planned"))
        await promote(kernel, GONE)

        report = await kernel.erase_agent(GONE)

        assert (report.facts, report.episodes, report.partitions) == (150, 120, 2)
        async with kernel.database.connection() as conn:
            names = [partition_name(t, GONE) for t in ("facts", "episodes")]
            left = await conn.scalar(
                text("SELECT count(*) FROM pg_class WHERE relname = ANY(:names)"), {"names": names}
            )
            known = await conn.scalar(text("SELECT count(*) FROM agent_partitions"))
        assert (left, known) == (0, 0)
        assert (await rows(kernel, STAYS))["facts"] == 1
        # The id starts afresh, in the shared partition.
        await kernel.heart.facts.learn(FactInput(agent_id=GONE, content="Spec 8 is planned"))
        assert (await rows(kernel, GONE))["facts"] == 1
    finally:
        await kernel.close()
