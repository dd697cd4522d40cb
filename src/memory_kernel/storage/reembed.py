"""Changing the embedder of a store without ever mixing dimensions.

Vectors of two embedders are not comparable, so the store never holds both in one column:

1. ``prepare``: every vector table gets a shadow column ``embedding_next vector(new_dim)``
   and a trigger that clears it whenever a row's ``embedding`` changes (so a row re-embedded
   by the old embedder meanwhile is re-embedded again);
2. ``fill`` (in the background, resumable, any number of times): rows that have an old
   vector and no new one get one from the new embedder, agent by agent, in batches — the
   kernel keeps serving with the old embedder all along;
3. ``switch`` (one short transaction, writers wait): the last stragglers are embedded, the
   old column is dropped (its HNSW indexes with it), the shadow column takes its name, the
   per-agent HNSW indexes are rebuilt and ``kernel_meta`` records the new embedder.

After the switch the database itself refuses old-dimension vectors (the column is typed
``vector(new_dim)``), and opening the store with the old embedder raises
``EmbedderMismatchError``: restart the application with the new embedder. ``abort`` drops
the shadow column and the trigger. ``reembed`` runs all three. The procedure is documented
in docs/reliability.md.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Row, TextClause, text
from sqlalchemy.ext.asyncio import AsyncConnection

from memory_kernel.embeddings import embed_checked
from memory_kernel.errors import ConfigError
from memory_kernel.protocols import Embedder
from memory_kernel.storage.database import Database
from memory_kernel.storage.partitions import _execute_formatted
from memory_kernel.storage.search import hnsw_predicate
from memory_kernel.storage.tables import PARTITIONED_TABLES, agent_partitions, kernel_meta
from memory_kernel.vectors import FloatMatrix

__all__ = ["ReembedReport", "abort", "fill", "prepare", "reembed", "remaining", "switch"]

_log = logging.getLogger(__name__)
_SHADOW = "embedding_next"
# The text each table's vector is computed from.
_SOURCE = {
    "facts": "content",
    "episodes": "summary",
    "decisions": "description",
    "turns": "content",
}
_TRIGGER = "mk_reembed_reset"


@dataclass(frozen=True, slots=True)
class ReembedReport:
    embedder_name: str
    embedder_dim: int
    embedded: int


async def prepare(db: Database, embedder: Embedder) -> None:
    """Add the shadow columns and the reset trigger (idempotent for the same dimension)."""
    dim = int(embedder.dim)
    async with db.transaction() as conn:
        current = await _shadow_dim(conn)
        if current is not None and current != dim:
            raise ConfigError(
                f"a re-embedding to dimension {current} is in progress; abort it first"
            )
        await conn.execute(
            text(
                f"CREATE OR REPLACE FUNCTION {_TRIGGER}() RETURNS trigger LANGUAGE plpgsql AS"
                f" $$ BEGIN IF NEW.embedding IS DISTINCT FROM OLD.embedding THEN"
                f" NEW.{_SHADOW} := NULL; END IF; RETURN NEW; END $$"
            )
        )
        for table in PARTITIONED_TABLES:
            await conn.execute(
                text(f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS {_SHADOW} vector({dim})")
            )
            await conn.execute(text(f"DROP TRIGGER IF EXISTS {_TRIGGER} ON {table}"))
            await conn.execute(
                text(
                    f"CREATE TRIGGER {_TRIGGER} BEFORE UPDATE ON {table}"
                    f" FOR EACH ROW EXECUTE FUNCTION {_TRIGGER}()"
                )
            )


async def remaining(db: Database) -> int:
    """Rows that still need a vector from the new embedder."""
    total = 0
    async with db.connection() as conn:
        for table in PARTITIONED_TABLES:
            total += int(
                await conn.scalar(
                    text(
                        f"SELECT count(*) FROM {table}"  # noqa: S608 - fixed names
                        f" WHERE embedding IS NOT NULL AND {_SHADOW} IS NULL"
                    )
                )
                or 0
            )
    return total


async def fill(
    db: Database, embedder: Embedder, *, batch: int = 256, embed_timeout_s: float = 60.0
) -> int:
    """Embed one batch per agent and table with the new embedder; returns how many rows got
    a vector (0: done). Safe to run while the kernel serves, and to stop at any time."""
    done = 0
    for table in PARTITIONED_TABLES:
        async with db.connection() as conn:
            agents = await _agents_to_fill(conn, table)
        for agent_id in agents:
            async with db.connection() as conn:
                rows = (await conn.execute(_pending_rows(table), {"a": agent_id, "n": batch})).all()
            if not rows:
                continue
            vectors = await embed_checked(embedder, [r.src for r in rows], timeout=embed_timeout_s)
            async with db.transaction() as conn:
                done += await _write(conn, table, agent_id, rows, vectors)
    return done


async def switch(
    db: Database, embedder: Embedder, now: datetime, *, embed_timeout_s: float = 60.0
) -> None:
    """Make the new vectors the store's vectors, in one transaction (writers wait)."""
    dim = int(embedder.dim)
    async with db.transaction() as conn:
        if await _shadow_dim(conn) != dim:
            raise ConfigError("prepare() the re-embedding with this embedder first")
        await conn.execute(text(f"LOCK TABLE {', '.join(PARTITIONED_TABLES)} IN EXCLUSIVE MODE"))
        for table in PARTITIONED_TABLES:
            for agent_id in await _agents_to_fill(conn, table, limit=None):
                rows = (await conn.execute(_pending_rows(table), {"a": agent_id, "n": None})).all()
                if rows:
                    vectors = await embed_checked(
                        embedder, [r.src for r in rows], timeout=embed_timeout_s
                    )
                    await _write(conn, table, agent_id, rows, vectors)
        for table in PARTITIONED_TABLES:
            await conn.execute(text(f"DROP TRIGGER IF EXISTS {_TRIGGER} ON {table}"))
            # Dropping the column drops the HNSW indexes built on it.
            await conn.execute(text(f"ALTER TABLE {table} DROP COLUMN embedding"))
            await conn.execute(text(f"ALTER TABLE {table} RENAME COLUMN {_SHADOW} TO embedding"))
        await conn.execute(text(f"DROP FUNCTION IF EXISTS {_TRIGGER}()"))
        await _rebuild_indexes(conn, db)
        await conn.execute(
            kernel_meta.update()
            .where(kernel_meta.c.id == 1)
            .values(embedder_name=embedder.name, embedder_dim=dim, updated_at=now)
        )
    _log.warning("embedder switched", extra={"embedder": embedder.name, "dim": dim})


async def abort(db: Database) -> None:
    """Give up a re-embedding: drop the shadow columns and the trigger."""
    async with db.transaction() as conn:
        for table in PARTITIONED_TABLES:
            await conn.execute(text(f"DROP TRIGGER IF EXISTS {_TRIGGER} ON {table}"))
            await conn.execute(text(f"ALTER TABLE {table} DROP COLUMN IF EXISTS {_SHADOW}"))
        await conn.execute(text(f"DROP FUNCTION IF EXISTS {_TRIGGER}()"))


async def reembed(
    db: Database, embedder: Embedder, now: datetime, *, batch: int = 256
) -> ReembedReport:
    """The whole procedure: prepare, fill until done, switch."""
    async with db.connection() as conn:
        row = (await conn.execute(kernel_meta.select())).first()
    if row is not None and (row.embedder_name, row.embedder_dim) == (embedder.name, embedder.dim):
        raise ConfigError(f"the store already uses embedder {embedder.name!r}")
    await prepare(db, embedder)
    embedded = 0
    while await remaining(db):
        embedded += await fill(db, embedder, batch=batch)
    await switch(db, embedder, now)
    return ReembedReport(embedder_name=embedder.name, embedder_dim=embedder.dim, embedded=embedded)


async def _shadow_dim(conn: AsyncConnection) -> int | None:
    """The dimension of the shadow column, if a re-embedding is in progress."""
    value = await conn.scalar(
        text(
            "SELECT atttypmod FROM pg_attribute WHERE attrelid = to_regclass('facts')"
            " AND attname = :col AND NOT attisdropped"
        ),
        {"col": _SHADOW},
    )
    return None if value is None else int(value)


async def _agents_to_fill(
    conn: AsyncConnection, table: str, *, limit: int | None = 1000
) -> list[str]:
    rows = await conn.execute(
        text(
            f"SELECT DISTINCT agent_id FROM {table}"  # noqa: S608 - fixed names
            f" WHERE embedding IS NOT NULL AND {_SHADOW} IS NULL LIMIT :n"
        ),
        {"n": limit},
    )
    return [str(r.agent_id) for r in rows]


def _pending_rows(table: str) -> TextClause:
    source = _SOURCE[table]
    return text(
        f"SELECT id, {source} AS src FROM {table} WHERE agent_id = :a"  # noqa: S608 - fixed names
        f" AND embedding IS NOT NULL AND {_SHADOW} IS NULL ORDER BY id LIMIT :n"
    )


async def _write(
    conn: AsyncConnection,
    table: str,
    agent_id: str,
    rows: Sequence[Row[Any]],
    vectors: FloatMatrix,
) -> int:
    """Store the new vectors; returns how many rows were handed in (progress)."""
    source = _SOURCE[table]
    # The text must still be the one embedded: a row changed meanwhile is left for later.
    await conn.execute(
        text(
            f"UPDATE {table} SET {_SHADOW} = :v WHERE agent_id = :a AND id = :id"  # noqa: S608 - fixed names
            f" AND {source} = :src AND embedding IS NOT NULL"
        ),
        [
            {"v": vector, "a": agent_id, "id": row.id, "src": row.src}
            for row, vector in zip(rows, vectors, strict=True)
        ],
    )
    return len(rows)


async def _rebuild_indexes(conn: AsyncConnection, db: Database) -> None:
    """The per-agent HNSW indexes, on the new column (``partitions.promote_agent``'s)."""
    cfg = db.config
    found = await conn.execute(
        agent_partitions.select().with_only_columns(
            agent_partitions.c.table_name, agent_partitions.c.partition_name
        )
    )
    for table, partition in found.all():
        if table not in PARTITIONED_TABLES:
            continue
        await _execute_formatted(
            conn,
            "CREATE INDEX %I ON %I USING hnsw (embedding vector_cosine_ops)"
            f" WITH (m = {cfg.hnsw_m:d}, ef_construction = {cfg.hnsw_ef_construction:d})"
            f" WHERE {hnsw_predicate(table)}",
            f"{partition}_hnsw",
            partition,
        )
