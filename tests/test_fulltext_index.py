"""Full-text indexes without a pending list: every ``search_tsv`` GIN index — the default
partitions' and those of agents promoted later — is built with ``fastupdate = off``, so new
rows' words go into the index itself and a text lookup never reads an unsorted backlog
(which made one take 11-20 ms after a few thousand writes); facts without a vector are
matched through the text-key index, not the full-text one. Real Postgres."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from sqlalchemy import text

from memory_kernel import MemoryKernel
from memory_kernel.heart.facts import store
from memory_kernel.models.facts import FactInput, LearnAction
from tests.conftest import open_promotable, promote

BIG = "big"

_GIN_INDEXES = text(
    "SELECT i.indexrelid::regclass::text AS name, c.reloptions AS options,"
    " CAST(c.relkind AS text) AS kind"
    " FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
    " JOIN pg_am am ON am.oid = c.relam JOIN pg_namespace n ON n.oid = c.relnamespace"
    " WHERE am.amname = 'gin' AND n.nspname = current_schema() ORDER BY 1"
)


@pytest.fixture
async def kernel(pg_dsn: str, drop_schema: str) -> AsyncIterator[MemoryKernel]:
    """Agent ``big`` promoted to partitions of its own after 150 facts and 120 episodes."""
    kernel = await open_promotable(pg_dsn, drop_schema, index_worker=False)
    try:
        await promote(kernel, BIG)
        yield kernel
    finally:
        await kernel.close()


async def test_every_full_text_index_has_no_pending_list(kernel: MemoryKernel) -> None:
    async with kernel.database.connection() as conn:
        found = (await conn.execute(_GIN_INDEXES)).all()
    names = [r.name for r in found]
    # The partitioned indexes, the default partitions' and the promoted agent's partitions'.
    assert sum("_default_" in n for n in names) == 4  # facts, episodes, decisions, turns
    assert sum("_a_" in n for n in names) == 2
    assert all(r.options == ["fastupdate=off"] for r in found), found


async def test_writes_leave_no_backlog_to_read(kernel: MemoryKernel) -> None:
    """1,000 facts stored without a vector (found by their words) and 1,000 with one, in
    the promoted partition and the shared one: no pending pages (with the default, these
    writes leave over 20 pages that every lookup reads)."""
    for agent in (BIG, "small"):
        await kernel.heart.facts.learn_many(
            [
                FactInput(
                    agent_id=agent,
                    content=f"Queue {i} drains into bucket {i} at {i % 12} am.",
                    defer_embedding=d,
                )
                for i in range(1000)
                for d in (True, False)
            ]
        )
    async with kernel.database.transaction() as conn:
        checked = 0
        for row in (await conn.execute(_GIN_INDEXES)).all():
            if row.kind == "I":  # a partitioned index: no pages of its own
                continue
            pending = await conn.scalar(
                text("SELECT gin_clean_pending_list(CAST(:i AS regclass))"), {"i": row.name}
            )
            assert pending == 0, f"{row.name}: {pending} pending pages"
            checked += 1
        assert checked == 6


async def test_facts_without_a_vector_are_matched_through_the_text_key_index(
    kernel: MemoryKernel,
) -> None:
    """The exact-text check of a fact without a vector probes the text-key index
    (migration 0007) of the agent's partition, never scans the agent's facts (promoted
    partitions get the index too); a repeat differing in case — of accented letters too —
    or punctuation is found, in the promoted partition and the shared one."""
    for agent in (BIG, "small"):
        first = await kernel.heart.facts.learn(
            FactInput(agent_id=agent, content="École Nord opens at 9:00.", defer_embedding=True)
        )
        again = await kernel.heart.facts.learn(
            FactInput(agent_id=agent, content="école nord opens at 9:00", defer_embedding=True)
        )
        assert again.action is LearnAction.REINFORCED and again.fact.id == first.fact.id
    read = store.read_statement(False, False, True)
    async with kernel.database.transaction() as conn:
        await conn.execute(text("SET LOCAL enable_seqscan = off"))
        found = await conn.execute(
            text(f"EXPLAIN {read.text}"), {"agent_id": BIG, "texts": ["École Nord opens."]}
        )
        plan = "\n".join(found.scalars())
    assert "_md5_idx" in plan and "search_tsv" not in plan, plan
