"""Upgrading a populated store: from the first revision to head, down to the first revision
and up again, with rows of every table (current and retired facts, vectors, an agent in its
own partition, and rows only head writes, such as context reports) — not one row lost or
changed."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, create_async_engine

from memory_kernel import EmbedderMismatchError, MemoryKernel, MemoryKernelError
from memory_kernel.models.decisions import DecisionInput
from memory_kernel.models.facts import FactInput
from memory_kernel.models.turns import TurnInput, TurnOutcome
from memory_kernel.storage import migrate, reembed
from memory_kernel.storage.database import Database
from memory_kernel.storage.partitions import promote_agent, rebalance
from memory_kernel.testing import FakeEmbedder, FrozenClock
from tests.conftest import schema_config

FIRST = "0001"
TABLES = ("facts", "episodes", "decisions", "memory_events", "kernel_meta", "agent_partitions")
NOW = datetime(2026, 1, 1, tzinfo=UTC)


# Storage bookkeeping added after the first revision, not memory: whether a row is in its
# HNSW index yet (0004; promotion sets it).
BOOKKEEPING = "indexed"


async def _rows(conn: AsyncConnection, schema: str) -> dict[str, list[str]]:
    """Every row of every table (its memory columns), as text, in a stable order."""
    out = {}
    for table in TABLES:
        result = await conn.execute(
            text(
                f"SELECT (to_jsonb(r) - '{BOOKKEEPING}')::text AS row"
                f' FROM "{schema}".{table} r ORDER BY 1'
            )
        )
        out[table] = [r.row for r in result]
    return out


async def _populate(conn: AsyncConnection, embedder: FakeEmbedder) -> None:
    """Rows written with the first revision's columns (raw SQL: the code is at head), before
    any kernel opened the store."""
    # Text literals: this raw engine has no pgvector codec.
    vectors = [
        "[" + ",".join(f"{x:.6g}" for x in v) + "]"
        for v in await embedder.embed([f"memory {i}" for i in range(60)])
    ]
    previous: uuid.UUID | None = None
    for i in range(60):
        agent = "big-agent" if i < 30 else f"agent-{i % 3}"
        fact_id = uuid.uuid4()
        retired = agent == "big-agent" and i < 29  # a supersession chain of 29 + 1 current
        await conn.execute(
            text(
                "INSERT INTO facts (agent_id, id, subject, subject_key, content, confidence,"
                " status, embedding, superseded_by, last_evidence_at, valid_from, valid_to,"
                " created_at, updated_at) VALUES (:a, :id, :subj, :key, :c, 0.7, :status,"
                " CAST(:vec AS vector), NULL, :t, :t, :valid_to, :t, :t)"
            ),
            {
                "a": agent, "id": fact_id, "subj": f"subject {i % 5}",
                "key": None if retired else f"subject {i}", "c": f"memory {i} \u00e9\U0001f680",
                "status": "superseded" if retired else "active", "vec": vectors[i],
                "t": NOW + timedelta(minutes=i), "valid_to": NOW + timedelta(minutes=i + 1)
                if retired else None,
            },
        )  # fmt: skip
        if previous is not None and agent == "big-agent":
            await conn.execute(
                text("UPDATE facts SET superseded_by = :new WHERE agent_id = :a AND id = :old"),
                {"new": fact_id, "a": agent, "old": previous},
            )
        previous = fact_id
        await conn.execute(
            text(
                "INSERT INTO memory_events (agent_id, id, memory_kind, memory_id, event,"
                " decided_by, created_at) VALUES (:a, :id, 'fact', :m, 'learned', 'caller', :t)"
            ),
            {"a": agent, "id": uuid.uuid4(), "m": fact_id, "t": NOW},
        )
    for i in range(10):
        await conn.execute(
            text(
                "INSERT INTO episodes (agent_id, id, session_id, summary, status, admission,"
                " embedding, started_at, created_at, updated_at) VALUES (:a, :id, 's', :s,"
                " 'completed', 'active', CAST(:v AS vector), :t, :t, :t)"
            ),
            {"a": f"agent-{i % 3}", "id": uuid.uuid4(), "s": f"episode {i}", "v": vectors[i],
             "t": NOW},
        )  # fmt: skip
        await conn.execute(
            text(
                "INSERT INTO decisions (agent_id, id, session_id, description, confidence,"
                " stakes, embedding, created_at, updated_at) VALUES (:a, :id, 's', :d, 0.8,"
                " 'high', CAST(:v AS vector), :t, :t)"
            ),
            {"a": f"agent-{i % 3}", "id": uuid.uuid4(), "d": f"decision {i}", "v": vectors[i],
             "t": NOW},
        )  # fmt: skip


async def _populate_at_head(kernel: MemoryKernel) -> None:
    """A turn (episode, decision, context report), a learned fact and an explicit decision
    with an outcome (0008)."""
    turn = TurnInput(
        agent_id="head-agent", session_id="s", message="Should we move the cache to Redis?",
        frame="decision",
    )  # fmt: skip
    ctx = await kernel.pre_turn(turn)
    assert ctx.turn.context is not None
    await kernel.post_turn(
        ctx.turn, TurnOutcome(response_text="We will move the cache to Redis next sprint.")
    )
    await kernel.heart.facts.learn(
        FactInput(agent_id="head-agent", content="The cache runs on Redis", explicit=True)
    )
    kept = await kernel.brain.record(
        DecisionInput(agent_id="head-agent", session_id="s", description="Keep Postgres 18")
    )
    await kernel.brain.record_outcome(
        kept.id, agent_id="head-agent", outcome="success", note="upgrade went fine"
    )


async def test_first_revision_to_head_down_and_up_loses_no_row(
    pg_dsn: str, drop_schema: str
) -> None:
    schema, embedder = drop_schema, FakeEmbedder()
    engine = create_async_engine(pg_dsn)
    try:
        async with engine.begin() as conn:
            await conn.execute(text("CREATE EXTENSION IF NOT EXISTS vector WITH SCHEMA public"))
        async with engine.begin() as conn:
            await conn.run_sync(migrate.upgrade, schema, FIRST)
        async with engine.begin() as conn:
            await conn.execute(text(f'SET LOCAL search_path TO "{schema}", public'))
            await _populate(conn, embedder)
        async with engine.connect() as conn:
            at_first = await _rows(conn, schema)
    finally:
        await engine.dispose()
    assert sum(map(len, at_first.values())) > 100

    # Opening the store upgrades it to head; then an agent gets its own partition.
    config = schema_config(
        schema, consolidation={"embed_worker": False}, storage={"index_worker": False}
    )
    async with MemoryKernel.open(
        pg_dsn, config=config, embedder=embedder, clock=FrozenClock()
    ) as kernel:
        db = kernel.database
        async with db.connection() as conn:
            assert await conn.run_sync(migrate.current_revision, schema) == migrate.head_revision()
            opened = await _rows(conn, schema)
        # The first open records the embedder (kernel_meta) and types the vector columns.
        assert {t: r for t, r in opened.items() if t != "kernel_meta"} == {
            t: r for t, r in at_first.items() if t != "kernel_meta"
        }
        assert len(opened["kernel_meta"]) == 1
        async with db.transaction() as conn:
            assert await promote_agent(conn, "facts", "big-agent", db.config, NOW) is not None
        async with db.connection() as conn:
            promoted = await _rows(conn, schema)
        assert promoted["facts"] == at_first["facts"], "promotion moves rows, never changes them"
        # Rows only head can write, written by the kernel: the round trip must keep them too
        # (the context report of a turn is a memory_events kind newer than the first revision).
        await _populate_at_head(kernel)
        async with db.connection() as conn:
            at_head = await _rows(conn, schema)
        assert any('"context_assembled"' in row for row in at_head["memory_events"])
        assert any('"decision_outcome"' in row for row in at_head["memory_events"])
        assert any('"outcome": "success"' in row for row in at_head["decisions"])
        async with db.transaction() as conn:
            await conn.run_sync(migrate.downgrade, schema, FIRST)
        async with db.connection() as conn:
            assert await conn.run_sync(migrate.current_revision, schema) == FIRST
            assert (await _rows(conn, schema)) == at_head
        async with db.transaction() as conn:
            await conn.run_sync(migrate.upgrade, schema, "head")
        async with db.connection() as conn:
            assert (await _rows(conn, schema)) == at_head
        # The upgraded store still works: history walks the migrated chain, search finds.
        current = await kernel.heart.facts.search("big-agent", "memory 29", k=1)
        assert current and current[0].fact.status == "active"
        chain = await kernel.heart.facts.history(current[0].fact.id, agent_id="big-agent")
        assert len(chain) == 30
        assert np.isfinite(current[0].similarity)


# -- changing the embedder ---------------------------------------------------------------


async def _dims(db: Database) -> set[int]:
    """Dimensions of every stored vector, all tables."""
    found: set[int] = set()
    async with db.connection() as conn:
        for table in ("facts", "episodes", "decisions"):
            rows = await conn.execute(
                text(f"SELECT DISTINCT vector_dims(embedding) AS d FROM {table}"
                     " WHERE embedding IS NOT NULL")
            )  # fmt: skip
            found |= {int(r.d) for r in rows}
    return found


async def test_changing_the_embedder_reembeds_in_the_background_and_never_mixes(
    pg_dsn: str, drop_schema: str
) -> None:
    config = schema_config(
        drop_schema,
        storage={"schema_name": drop_schema, "dedicated_partition_rows": 100},
        consolidation={"embed_worker": False},
    )
    old, new, clock = FakeEmbedder(384), FakeEmbedder(256, name="new-embedder"), FrozenClock()
    async with MemoryKernel.open(pg_dsn, config=config, embedder=old, clock=clock) as kernel:
        db = kernel.database
        for agent, n in (("big", 150), ("small", 20)):
            await kernel.heart.facts.learn_many(
                [FactInput(agent_id=agent, content=f"Service {i} of {agent} runs on host {i}",
                           explicit=True, defer_embedding=i % 10 == 0) for i in range(n)]
            )  # fmt: skip
        await kernel.brain.record(
            DecisionInput(agent_id="small", session_id="s", description="Adopt pgvector now")
        )
        await rebalance(db, clock.now())  # "big" gets its own partition + HNSW index
        # Background phase: part of the rows get new vectors while the kernel keeps serving.
        await reembed.prepare(db, new)
        assert await reembed.fill(db, new, batch=50) > 0
        assert await reembed.remaining(db) > 0
        late = await kernel.heart.facts.learn(
            FactInput(agent_id="small", content="Written during the re-embedding", explicit=True)
        )
        assert await _dims(db) == {384}, "the live column still holds only old vectors"
        report = await reembed.reembed(db, new, clock.now(), batch=50)
        assert report.embedder_dim == 256
        assert await _dims(db) == {256}, "after the switch only new vectors exist"
        # The old kernel can no longer write or compare old vectors: the database refuses
        # them with a typed error, nothing is mixed.
        with pytest.raises(MemoryKernelError):
            await kernel.heart.facts.learn(
                FactInput(agent_id="small", content="An old-dimension vector", explicit=True)
            )
        with pytest.raises(MemoryKernelError):
            await kernel.heart.facts.search("big", "Service 7 of big", k=3)
        assert await _dims(db) == {256}
    with pytest.raises(EmbedderMismatchError):
        await MemoryKernel.open(pg_dsn, config=config, embedder=old, clock=clock)
    async with MemoryKernel.open(pg_dsn, config=config, embedder=new, clock=clock) as kernel:
        async with kernel.database.connection() as conn:
            content = await conn.scalar(
                text("SELECT content FROM facts WHERE agent_id = 'big' AND status = 'active'"
                     " AND embedding IS NOT NULL LIMIT 1")
            )  # fmt: skip
        hits = await kernel.heart.facts.search("big", str(content), k=1)
        assert hits and hits[0].fact.content == content and hits[0].matched_by == "vector"
        assert (await kernel.heart.facts.get(late.fact.id, agent_id="small")).content
        pending = await kernel.heart.facts.search("big", "Service 10 of big runs on host 10", k=3)
        assert any(h.fact.status == "pending_embed" for h in pending), "pending stays pending"
        assert (await kernel.heart.facts.embed_pending("big")).embedded > 0
        assert await _dims(kernel.database) == {256}
        async with kernel.database.connection() as conn:
            indexes = await conn.scalar(
                text("SELECT count(*) FROM pg_indexes WHERE schemaname = :s"
                     " AND indexname LIKE 'facts_a_%_hnsw'"), {"s": drop_schema},
            )  # fmt: skip
        assert indexes == 1, "the promoted agent's HNSW index was rebuilt on the new column"
