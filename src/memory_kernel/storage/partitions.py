"""Per-agent partitions: the storage half of the search primitive.

Small agents share each table's DEFAULT partition, where a search is an exact scan of that
agent's rows (through the ``agent_id`` btree) — cheap at a few thousand rows and always
complete. When an agent outgrows ``StorageConfig.dedicated_partition_rows`` it is *promoted*:
its rows move, in one transaction, into a partition of its own with an HNSW index on just
its searchable rows, so an ANN scan never has to skip other agents' neighbours.

Promotion takes an ACCESS EXCLUSIVE lock on the default partition while ``ATTACH`` checks it,
so it runs in maintenance (``consolidate`` / ``rebalance``), never on the write path.
Moving rows is not deleting memories: ids, statuses and history move with them.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from memory_kernel.config import StorageConfig
from memory_kernel.storage import locks
from memory_kernel.storage.database import Database
from memory_kernel.storage.search import hnsw_predicate
from memory_kernel.storage.tables import PARTITIONED_TABLES, agent_partitions, metadata

__all__ = ["Promotion", "agents_to_promote", "partition_name", "promote_agent", "rebalance"]

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Promotion:
    table: str
    agent_id: str
    partition: str
    rows: int


def partition_name(table: str, agent_id: str) -> str:
    """A stable, identifier-safe name for an agent's partition (agent ids are arbitrary)."""
    digest = hashlib.blake2b(agent_id.encode(), digest_size=10).hexdigest()
    return f"{table}_a_{digest}"


async def agents_to_promote(
    conn: AsyncConnection, table: str, threshold: int, *, limit: int = 100
) -> list[tuple[str, int]]:
    """Agents in ``table``'s default partition with more than ``threshold`` rows."""
    _check_table(table)
    rows = await conn.execute(
        text(
            f"SELECT agent_id, count(*) AS n FROM {table}_default "  # noqa: S608 - fixed names
            "GROUP BY agent_id HAVING count(*) > :threshold ORDER BY n DESC LIMIT :limit"
        ),
        {"threshold": threshold, "limit": limit},
    )
    return [(r.agent_id, int(r.n)) for r in rows]


async def promote_agent(
    conn: AsyncConnection, table: str, agent_id: str, config: StorageConfig, now: datetime
) -> Promotion | None:
    """Move ``agent_id``'s rows of ``table`` into a partition of its own (in the caller's
    transaction). Returns ``None`` when the agent already has one."""
    _check_table(table)
    await locks.lock(conn, "mk-partition", table, agent_id)
    exists = await conn.scalar(
        agent_partitions.select()
        .with_only_columns(agent_partitions.c.partition_name)
        .where(agent_partitions.c.agent_id == agent_id, agent_partitions.c.table_name == table)
    )
    if exists is not None:
        return None
    name = partition_name(table, agent_id)
    names = [c.name for c in metadata.tables[table].c if c.computed is None]
    columns = ", ".join(f'"{n}"' for n in names)
    # Moved rows go into the HNSW index built below, staged ones included (one bulk build).
    moved_values = ", ".join("true" if n == "indexed" else f'"{n}"' for n in names)
    # Identifiers come from fixed table names and a hex digest; the agent id is quoted by
    # Postgres itself (format %L) because DDL cannot take bound parameters.
    await conn.execute(
        text(
            f"CREATE TABLE {name} (LIKE {table} INCLUDING DEFAULTS INCLUDING CONSTRAINTS"
            # Free space per page lets confidence/status updates stay HOT: without it every
            # update re-inserts the row into the HNSW index, many times dearer than a HOT one.
            " INCLUDING GENERATED) WITH (fillfactor = 70)"
        )
    )
    # A CHECK matching the partition bound lets ATTACH skip scanning the new table.
    await _execute_formatted(
        conn,
        "ALTER TABLE %I ADD CONSTRAINT %I CHECK (agent_id = %L)",
        name,
        f"{name}_agent",
        agent_id,
    )
    # One statement moves the rows: exactly the rows deleted are the rows inserted, so a
    # concurrent write can never fall between a copy and a delete.
    moved = await conn.execute(
        text(
            f"WITH gone AS (DELETE FROM {table}_default WHERE agent_id = :agent"  # noqa: S608
            f" RETURNING {columns}) INSERT INTO {name} ({columns}) SELECT {moved_values} FROM gone"
        ),
        {"agent": agent_id},
    )
    # Build the index and statistics before ATTACH: ATTACH takes an ACCESS EXCLUSIVE lock on
    # the default partition (while it checks it holds no rows of this agent), and every
    # small agent waits on that lock until commit — so keep the slow work before it.
    await conn.execute(
        text(
            f"CREATE INDEX {name}_hnsw ON {name} USING hnsw (embedding vector_cosine_ops)"
            f" WITH (m = {config.hnsw_m:d}, ef_construction = {config.hnsw_ef_construction:d})"
            f" WHERE {hnsw_predicate(table)}"
        )
    )
    # Fresh tables have no statistics; without them the planner ignores the new index.
    await conn.execute(text(f"ANALYZE {name}"))
    await _execute_formatted(
        conn, "ALTER TABLE %I ATTACH PARTITION %I FOR VALUES IN (%L)", table, name, agent_id
    )
    await conn.execute(
        agent_partitions.insert().values(
            agent_id=agent_id,
            table_name=table,
            partition_name=name,
            rows_at_promotion=moved.rowcount,
            created_at=now,
        )
    )
    _log.info("promoted agent to a partition", extra={"table": table, "rows": moved.rowcount})
    return Promotion(table=table, agent_id=agent_id, partition=name, rows=moved.rowcount)


async def _execute_formatted(conn: AsyncConnection, template: str, *args: str) -> None:
    """Run DDL built by Postgres's own ``format()``: identifiers with %I, literals with %L.

    DDL cannot take bound parameters, so quoting is left to the server rather than to us.
    """
    placeholders = ", ".join(f"CAST(:a{i} AS text)" for i in range(len(args)))
    statement = await conn.scalar(
        text(f"SELECT format(CAST(:template AS text), {placeholders})"),
        {"template": template, **{f"a{i}": a for i, a in enumerate(args)}},
    )
    await conn.execute(text(str(statement)))


def _check_table(table: str) -> None:
    if table not in PARTITIONED_TABLES:
        raise ValueError(f"{table!r} is not partitioned by agent")


async def rebalance(database: Database, now: datetime) -> list[Promotion]:
    """Promote every agent that outgrew the default partition, one transaction each."""
    threshold = database.config.dedicated_partition_rows
    done: list[Promotion] = []
    for table in PARTITIONED_TABLES:
        async with database.connection() as conn:
            candidates = await agents_to_promote(conn, table, threshold)
        for agent_id, _ in candidates:
            async with database.transaction() as conn:
                # HNSW builds far faster when the graph fits in memory.
                await conn.execute(text("SET LOCAL maintenance_work_mem = '256MB'"))
                promotion = await promote_agent(conn, table, agent_id, database.config, now)
            if promotion is not None:
                done.append(promotion)
    return done
