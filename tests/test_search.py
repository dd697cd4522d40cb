"""The per-agent search primitive: complete top-k, agent isolation, before and after an agent
is promoted to its own HNSW partition — against real Postgres + pgvector."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import numpy as np
import numpy.typing as npt
import pytest
from sqlalchemy import event, text
from sqlalchemy.ext.asyncio import AsyncConnection

from memory_kernel import ConflictError, MemoryKernel, MemoryKernelConfig
from memory_kernel.storage.partitions import partition_name, promote_agent, rebalance
from memory_kernel.storage.search import hnsw_predicate, nearest
from memory_kernel.storage.tables import facts
from memory_kernel.testing import FakeEmbedder, FrozenClock

NOW = datetime(2026, 1, 1, tzinfo=UTC)
Vectors = npt.NDArray[np.float32]


def _unit(rng: np.random.Generator, n: int, dim: int = 384) -> Vectors:
    centres = rng.normal(size=(8, dim))
    points = centres[rng.integers(0, 8, size=n)] + 0.6 * rng.normal(size=(n, dim))
    points /= np.linalg.norm(points, axis=1, keepdims=True)
    return points.astype(np.float32)


async def _insert(
    conn: AsyncConnection, agent: str, vectors: Vectors, status: str = "active"
) -> list[uuid.UUID]:
    ids = [uuid.uuid4() for _ in range(len(vectors))]
    rows = [
        {
            "agent_id": agent,
            "id": i,
            "content": f"{agent} fact {n}",
            "confidence": 0.7,
            "status": status,
            "embedding": v,
            "last_evidence_at": NOW,
            "valid_from": NOW,
            "created_at": NOW,
            "updated_at": NOW,
        }
        for n, (i, v) in enumerate(zip(ids, vectors, strict=True))
    ]
    await conn.execute(facts.insert(), rows)
    return ids


def _exact(vectors: Vectors, ids: list[uuid.UUID], query: Vectors, k: int) -> list[uuid.UUID]:
    order = np.argsort(-(vectors @ query), kind="stable")[:k]
    return [ids[i] for i in order]


@pytest.fixture
async def small_partitions(pg_dsn: str, drop_schema: str) -> AsyncIterator[MemoryKernel]:
    """A kernel that promotes agents past 150 rows, so promotion is cheap to test."""
    config = MemoryKernelConfig.from_mapping(
        {"storage": {"schema_name": drop_schema, "dedicated_partition_rows": 150}}
    )
    async with MemoryKernel.open(
        pg_dsn, config=config, clock=FrozenClock(NOW), embedder=FakeEmbedder(384)
    ) as kernel:
        yield kernel


async def test_top_k_is_exact_in_the_shared_partition_and_isolated(kernel: MemoryKernel) -> None:
    rng = np.random.default_rng(1)
    mine, theirs = _unit(rng, 120, kernel.embedder.dim), _unit(rng, 120, kernel.embedder.dim)
    async with kernel.database.transaction() as conn:
        my_ids = await _insert(conn, "me", mine)
        await _insert(conn, "them", theirs)
        await _insert(conn, "me", _unit(rng, 30, kernel.embedder.dim), status="superseded")
    for query in _unit(rng, 5, kernel.embedder.dim):
        async with kernel.database.connection() as conn:
            rows = await nearest(conn, facts, agent_id="me", vector=query, k=10)
        assert [r.id for r in rows] == _exact(mine, my_ids, query, 10)
        assert {r.agent_id for r in rows} == {"me"}
        assert all(r.status == "active" for r in rows)
        distances = [r.distance for r in rows]
        assert distances == sorted(distances)


async def test_promoted_agent_is_searched_in_its_own_hnsw_partition(
    small_partitions: MemoryKernel,
) -> None:
    kernel = small_partitions
    rng = np.random.default_rng(2)
    big, small = _unit(rng, 400), _unit(rng, 50)
    async with kernel.database.transaction() as conn:
        big_ids = await _insert(conn, "big", big)
        await _insert(conn, "small", small)
    promoted = await rebalance(kernel.database, NOW)
    assert [(p.table, p.agent_id, p.rows) for p in promoted] == [("facts", "big", 400)]
    assert await rebalance(kernel.database, NOW) == [], "promotion happens once"

    name = partition_name("facts", "big")
    async with kernel.database.connection() as conn:
        own = await conn.scalar(text(f"SELECT count(*) FROM {name}"))
        shared = await conn.scalar(text("SELECT count(*) FROM facts_default"))
        assert (own, shared) == (400, 50), "rows moved, none lost"
        # Forbid the sort so the plan must be an ordered index scan: it proves the partial
        # HNSW index matches the search predicate (at this size the planner may prefer exact).
        await conn.execute(text("SET LOCAL enable_sort = off"))
        plan = "\n".join(
            r[0]
            for r in await conn.execute(
                text(
                    "EXPLAIN SELECT id FROM facts WHERE agent_id = 'big' AND"
                    f" {hnsw_predicate('facts')} ORDER BY embedding <=> CAST(:q AS vector)"
                    " LIMIT 10"
                ),
                {"q": big[0]},
            )
        )
    assert f"{name}_hnsw" in plan, plan
    assert "facts_default" not in plan, "the query must prune to the agent's partition"

    hits = 0
    queries = _unit(rng, 20)
    for query in queries:
        async with kernel.database.connection() as conn:
            rows = await nearest(conn, facts, agent_id="big", vector=query, k=10)
        assert len(rows) == 10
        assert {r.agent_id for r in rows} == {"big"}
        hits += len({r.id for r in rows} & set(_exact(big, big_ids, query, 10)))
    assert hits / (10 * len(queries)) >= 0.95


async def test_promotion_keeps_unique_subject_rule(small_partitions: MemoryKernel) -> None:
    kernel = small_partitions
    async with kernel.database.transaction() as conn:
        await _insert(conn, "big", _unit(np.random.default_rng(3), 200))
        promoted = await promote_agent(conn, "facts", "big", kernel.database.config, NOW)
    assert promoted is not None
    insert = text(
        "INSERT INTO facts (agent_id, id, subject_key, content, confidence, status,"
        " last_evidence_at, valid_from, created_at, updated_at)"
        " VALUES ('big', :id, 'k', 'x', 0.5, 'active', now(), now(), now(), now())"
    )
    async with kernel.database.transaction() as conn:
        await conn.execute(insert, {"id": uuid.uuid4()})
    with pytest.raises(ConflictError):
        async with kernel.database.transaction() as conn:
            await conn.execute(insert, {"id": uuid.uuid4()})


async def test_agent_ids_that_need_quoting_are_promoted_safely(
    small_partitions: MemoryKernel,
) -> None:
    kernel = small_partitions
    agent = "o'brien\"; DROP TABLE facts; --"
    async with kernel.database.transaction() as conn:
        await _insert(conn, agent, _unit(np.random.default_rng(4), 200))
    promoted = await rebalance(kernel.database, NOW)
    assert [p.agent_id for p in promoted] == [agent]
    async with kernel.database.connection() as conn:
        rows = await nearest(
            conn, facts, agent_id=agent, vector=_unit(np.random.default_rng(5), 1)[0], k=3
        )
    assert len(rows) == 3


async def test_filters_and_labels_agree_in_both_partitions(small_partitions: MemoryKernel) -> None:
    """Plain columns and labelled ones, inside and outside a transaction, in both kinds of
    partition, return the same rows in the same order; filters apply; listeners of the engine
    see every search statement."""
    kernel = small_partitions
    rng = np.random.default_rng(6)
    async with kernel.database.transaction() as conn:
        await _insert(conn, "big", _unit(rng, 300))
        await _insert(conn, "small", _unit(rng, 60))
        await conn.execute(
            text("UPDATE facts SET confidence = 0.2 WHERE content LIKE '%0'")
        )  # every tenth fact: filtered out below
    await rebalance(kernel.database, NOW)
    seen: list[str] = []
    event.listen(
        kernel.database.engine.sync_engine, "before_cursor_execute", lambda *a: seen.append(a[2])
    )
    for agent in ("big", "small"):
        for query in _unit(rng, 5):
            where = [facts.c.confidence >= 0.5, facts.c.status != "superseded"]
            async with kernel.database.connection() as conn:
                seen.clear()
                fast = await nearest(
                    conn, facts, agent_id=agent, vector=query, k=8, where=where,
                    columns=[facts.c.id, facts.c.content, facts.c.metadata],
                )  # fmt: skip
                assert len(seen) == 1, "one statement, seen by the engine's listeners"
            async with kernel.database.transaction() as conn:
                slow = await nearest(
                    conn, facts, agent_id=agent, vector=query, k=8, where=where,
                    columns=[facts.c.id, facts.c.content.label("content"), facts.c.metadata],
                )  # fmt: skip
                assert seen[1:], "seen by the engine's listeners"
            assert len(fast) == 8
            assert [r.id for r in fast] == [r.id for r in slow]
            assert [r.content for r in fast] == [r._mapping["content"] for r in slow]
            assert all(not r.content.endswith("0") for r in fast), "the filter applies"
            assert all(r.metadata == {} for r in fast), "JSON decoded like SQLAlchemy's"
            assert all(isinstance(r.id, uuid.UUID) for r in fast)
            np.testing.assert_allclose(
                [r.distance for r in fast], [r.distance for r in slow], atol=1e-6
            )
            with pytest.raises(AttributeError):
                _ = fast[0].no_such_column
