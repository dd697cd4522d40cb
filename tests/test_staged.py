"""Staged rows: new facts and episodes of a promoted agent are written outside its HNSW index,
found by the exact tier at once, and moved into the index in the background — against real
Postgres + pgvector."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import numpy as np
import pytest
from sqlalchemy import text

from memory_kernel import MemoryKernel
from memory_kernel.models.episodes import EpisodeInput
from memory_kernel.models.facts import FactInput
from memory_kernel.storage.indexer import index_staged
from memory_kernel.storage.partitions import partition_name, rebalance
from memory_kernel.storage.search import SEARCHABLE, nearest, tiers
from memory_kernel.storage.tables import episodes, facts
from tests.conftest import open_promotable

NOW = datetime(2026, 1, 1, tzinfo=UTC)
BIG = "big"


@pytest.fixture
async def promoted(pg_dsn: str, drop_schema: str) -> AsyncIterator[MemoryKernel]:
    """A kernel (index worker off) whose agent ``big`` has its own facts and episodes
    partitions, with an HNSW index each."""
    kernel = await open_promotable(pg_dsn, drop_schema, index_worker=False)
    try:
        topics = [f"service {i} runs job {i * 7} on host {i % 13}" for i in range(150)]
        await kernel.heart.facts.learn_many(
            [FactInput(agent_id=BIG, content=t, explicit=True) for t in topics]
        )
        for i in range(120):
            start = await kernel.heart.episodes.start(
                EpisodeInput(agent_id=BIG, session_id=f"s{i}", summary=f"migrate shard {i}")
            )
            await kernel.heart.episodes.end(
                start.episode.id, agent_id=BIG, outcome=f"shard {i} moved to pool {i}"
            )
        promoted = await rebalance(kernel.database, NOW)
        assert {p.table for p in promoted} >= {"facts", "episodes"}
        yield kernel
    finally:
        await kernel.close()


async def _flags(kernel: MemoryKernel, table: str, ids: list[uuid.UUID]) -> list[bool]:
    async with kernel.database.connection() as conn:
        rows = await conn.execute(
            text(f"SELECT id, indexed FROM {table} WHERE agent_id = :a AND id = ANY(:ids)"),
            {"a": BIG, "ids": ids},
        )
        found = {r.id: r.indexed for r in rows}
    return [found[i] for i in ids]


async def test_promotion_indexes_every_moved_row_and_the_index_excludes_staged_ones(
    promoted: MemoryKernel,
) -> None:
    async with promoted.database.connection() as conn:
        staged = await conn.scalar(
            text("SELECT count(*) FROM facts WHERE agent_id = :a AND NOT indexed"), {"a": BIG}
        )
        definition = await conn.scalar(
            text("SELECT indexdef FROM pg_indexes WHERE indexname = :n"),
            {"n": f"{partition_name('facts', BIG)}_hnsw"},
        )
    assert staged == 0, "the bulk build at promotion indexes everything it moves"
    assert definition is not None and "indexed" in definition


async def test_new_facts_are_staged_found_at_once_and_indexed_later(
    promoted: MemoryKernel,
) -> None:
    kernel = promoted
    new = [
        "The billing export is written every night to the finance bucket",
        "Grafana dashboards for the search cluster live in the observability folder",
        "Our on-call handbook asks for a postmortem within five working days",
    ]
    outcomes = await kernel.heart.facts.learn_many(
        [FactInput(agent_id=BIG, content=c, explicit=True) for c in new]
    )
    ids = [o.fact.id for o in outcomes]
    assert await _flags(kernel, "facts", ids) == [False, False, False]

    async def top1() -> list[uuid.UUID]:
        vectors = await kernel.embedder.embed(new)
        async with kernel.database.connection() as conn:
            return [
                (await nearest(conn, facts, agent_id=BIG, vector=v, k=1))[0].id for v in vectors
            ]

    assert await top1() == ids, "the staged tier finds new facts before they are indexed"
    hits = await kernel.heart.facts.search(BIG, new[1], k=3)
    assert hits[0].fact.id == ids[1]

    assert await index_staged(kernel.database, batch=2) == 3
    assert await _flags(kernel, "facts", ids) == [True, True, True]
    assert await top1() == ids, "and the HNSW tier after"
    assert await index_staged(kernel.database, batch=2) == 0


async def test_a_fact_retired_while_staged_is_never_indexed(promoted: MemoryKernel) -> None:
    kernel = promoted
    old = await kernel.heart.facts.learn(
        FactInput(agent_id=BIG, subject="deploy day", content="Deploys happen on Tuesday")
    )
    new = await kernel.heart.facts.learn(
        FactInput(agent_id=BIG, subject="deploy day", content="Deploys happen on Thursday")
    )
    assert new.superseded == (old.fact.id,)
    assert await index_staged(kernel.database, batch=16) == 1
    assert await _flags(kernel, "facts", [old.fact.id, new.fact.id]) == [False, True]


async def test_ended_episodes_are_staged_and_searchable(promoted: MemoryKernel) -> None:
    kernel = promoted
    start = await kernel.heart.episodes.start(
        EpisodeInput(agent_id=BIG, session_id="new", summary="rotate the TLS certificates")
    )
    ended = await kernel.heart.episodes.end(
        start.episode.id, agent_id=BIG, outcome="certificates rotated on all gateways"
    )
    assert await _flags(kernel, "episodes", [ended.episode.id]) == [False]
    hits = await kernel.heart.episodes.search(BIG, "rotate the TLS certificates", k=1)
    assert hits[0].episode.id == ended.episode.id
    assert await index_staged(kernel.database, batch=16) == 1
    assert await _flags(kernel, "episodes", [ended.episode.id]) == [True]


async def test_tiers_partition_the_searchable_rows(promoted: MemoryKernel) -> None:
    """Every searchable row is in exactly one tier, whatever the flags."""
    kernel = promoted
    await kernel.heart.facts.learn(FactInput(agent_id=BIG, content="Backups run at 02:00 UTC"))
    async with kernel.database.connection() as conn:
        for table in (facts, episodes):
            counts = [
                await conn.scalar(
                    text(f"SELECT count(*) FROM {table.name} WHERE agent_id = :a AND {t}"),
                    {"a": BIG},
                )
                for t in (*tiers(table.name), SEARCHABLE[table.name])
            ]
            assert counts[0] + counts[1] == counts[2] > 0


async def test_the_worker_indexes_what_this_process_writes(pg_dsn: str, drop_schema: str) -> None:
    kernel = await open_promotable(pg_dsn, drop_schema, index_worker=True)
    try:
        await kernel.heart.facts.learn_many(
            [
                FactInput(agent_id=BIG, content=f"queue {i} drains into topic {i}")
                for i in range(120)
            ]
        )
        await rebalance(kernel.database, NOW)
        learned = await kernel.heart.facts.learn(
            FactInput(agent_id=BIG, content="The audit log is kept for 400 days")
        )
        for _ in range(200):  # the worker was woken by the learn: well under a second
            if await _flags(kernel, "facts", [learned.fact.id]) == [True]:
                break
            await asyncio.sleep(0.05)
        assert await _flags(kernel, "facts", [learned.fact.id]) == [True]
        vector = (await kernel.embedder.embed(["The audit log is kept for 400 days"]))[0]
        async with kernel.database.connection() as conn:
            rows = await nearest(conn, facts, agent_id=BIG, vector=np.asarray(vector), k=1)
        assert rows[0].id == learned.fact.id
    finally:
        await kernel.close()
