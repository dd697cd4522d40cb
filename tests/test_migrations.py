"""Migrations: up → down → up on a populated database re-creates exactly the same schema,
through the package API and through Alembic at the repo root."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, create_async_engine

from memory_kernel import MemoryKernel
from memory_kernel.storage import migrate
from tests.conftest import schema_config

ROOT = Path(__file__).resolve().parents[1]

_SNAPSHOT = text(
    """
    SELECT 'column' AS kind, c.table_name || '.' || c.column_name || ' ' || c.data_type
           || ' ' || c.is_nullable || ' ' || coalesce(c.column_default, '') AS item
      FROM information_schema.columns c WHERE c.table_schema = :s
    UNION ALL
    SELECT 'index', i.tablename || ' ' || i.indexname || ' ' || i.indexdef
      FROM pg_indexes i WHERE i.schemaname = :s
    UNION ALL
    SELECT 'constraint', rel.relname || ' ' || con.conname || ' ' || pg_get_constraintdef(con.oid)
      FROM pg_constraint con JOIN pg_class rel ON rel.oid = con.conrelid
      JOIN pg_namespace n ON n.oid = rel.relnamespace WHERE n.nspname = :s
    UNION ALL
    SELECT 'partition', parent.relname || ' <- ' || child.relname || ' '
           || coalesce(pg_get_expr(child.relpartbound, child.oid), '')
      FROM pg_inherits JOIN pg_class parent ON parent.oid = pg_inherits.inhparent
      JOIN pg_class child ON child.oid = pg_inherits.inhrelid
      JOIN pg_namespace n ON n.oid = parent.relnamespace WHERE n.nspname = :s
    ORDER BY 1, 2
    """
)

_TABLES = ("facts", "episodes", "decisions", "memory_events", "kernel_meta", "agent_partitions")


async def _snapshot(conn: AsyncConnection, schema: str) -> list[tuple[str, str]]:
    rows = await conn.execute(_SNAPSHOT, {"s": schema})
    return [(r.kind, r.item.replace(schema, "<schema>")) for r in rows]


async def _table_names(conn: AsyncConnection, schema: str) -> set[str]:
    rows = await conn.execute(
        text("SELECT tablename FROM pg_tables WHERE schemaname = :s"), {"s": schema}
    )
    return {r.tablename for r in rows}


async def _populate(conn: AsyncConnection) -> None:
    await conn.execute(
        text(
            "INSERT INTO facts (agent_id, id, content, confidence, status, last_evidence_at,"
            " valid_from, created_at, updated_at)"
            " SELECT 'agent-' || (g % 3), gen_random_uuid(), 'fact ' || g, 0.5, 'active',"
            " now(), now(), now(), now() FROM generate_series(1, 50) g"
        )
    )


async def test_up_down_up_on_a_populated_database(pg_dsn: str, drop_schema: str) -> None:
    schema = drop_schema
    async with MemoryKernel.open(pg_dsn, config=schema_config(schema)) as kernel:
        async with kernel.database.transaction() as conn:
            await _populate(conn)
            before = await _snapshot(conn, schema)
        assert before, "the snapshot query must see the schema"
        async with kernel.database.transaction() as conn:
            await conn.run_sync(migrate.downgrade, schema, "base")
        async with kernel.database.connection() as conn:
            assert not (await _table_names(conn, schema)) & set(_TABLES)
        async with kernel.database.transaction() as conn:
            await conn.run_sync(migrate.upgrade, schema, "head")
        async with kernel.database.connection() as conn:
            after = await _snapshot(conn, schema)
    # The embedder binding types the vector columns on first open; compare like with like.
    normalise = [(k, i.replace("USER-DEFINED", "vector")) for k, i in before]
    assert [(k, i.replace("USER-DEFINED", "vector")) for k, i in after] == normalise


async def test_repo_root_alembic_upgrade_and_downgrade(pg_dsn: str, drop_schema: str) -> None:
    schema = drop_schema
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    base = [sys.executable, "-m", "alembic", "-x", f"dsn={pg_dsn}", "-x", f"schema={schema}"]
    up = await asyncio.to_thread(
        subprocess.run, [*base, "upgrade", "head"], cwd=ROOT, env=env, capture_output=True
    )
    assert up.returncode == 0, up.stderr.decode()
    engine = create_async_engine(pg_dsn)
    try:
        async with engine.connect() as conn:
            assert set(_TABLES) <= await _table_names(conn, schema)
            revision = await conn.scalar(
                text(f'SELECT version_num FROM "{schema}".alembic_version')
            )
        assert revision == migrate.head_revision()
        down = await asyncio.to_thread(
            subprocess.run, [*base, "downgrade", "base"], cwd=ROOT, env=env, capture_output=True
        )
        assert down.returncode == 0, down.stderr.decode()
        async with engine.connect() as conn:
            assert not (await _table_names(conn, schema)) & set(_TABLES)
    finally:
        await engine.dispose()


async def test_concurrent_first_opens_migrate_once(pg_dsn: str, drop_schema: str) -> None:
    config = schema_config(drop_schema)
    kernels = await asyncio.gather(*(MemoryKernel.open(pg_dsn, config=config) for _ in range(4)))
    try:
        infos = [await k.info() for k in kernels]
        assert {i.schema_revision for i in infos} == {migrate.head_revision()}
    finally:
        for k in kernels:
            await k.close()
