"""Moving staged rows into their agent partition's HNSW index, off the write path.

Facts and episodes are written with ``indexed = false`` (``storage.search.tiers``): searched
exactly until this module sets the flag, which is when Postgres inserts them into the
partition's partial HNSW index (the dearest write there is, kept off the hooks). Only promoted
agents have such an index; rows of the shared partition stay staged until their agent is
promoted, which indexes them in one bulk build.

Batches are short transactions (``StorageConfig.index_batch`` rows): a ``learn`` that needs
one of those rows waits at most one batch, and rows a writer holds are skipped (``SKIP
LOCKED``), never waited for. A row retired before its turn is never indexed at all.
"""

from __future__ import annotations

import logging

from sqlalchemy import select, text, tuple_

from memory_kernel.background import PollingWorker
from memory_kernel.errors import MemoryKernelError
from memory_kernel.storage.database import Database
from memory_kernel.storage.search import STAGED_TABLES, tiers
from memory_kernel.storage.tables import agent_partitions

__all__ = ["IndexWorker", "index_staged"]

_log = logging.getLogger(__name__)


def _move_sql(table: str, partition: str) -> str:
    staged = tiers(table)[1]
    # ``partition`` comes from agent_partitions: partition_name() (table + a hex digest).
    return (
        f"UPDATE {partition} SET indexed = true WHERE id IN ("  # noqa: S608 - see above
        f" SELECT id FROM {partition} WHERE {staged} LIMIT :n FOR UPDATE SKIP LOCKED)"
    )


async def index_staged(
    db: Database,
    *,
    batch: int,
    limit: int | None = None,
    only: set[tuple[str, str]] | None = None,
) -> int:
    """Index the staged rows of promoted agents — every one, or ``only`` these (table,
    agent) pairs — ``batch`` rows per transaction and up to ``limit`` rows per partition
    (``None``: all), so one busy agent cannot starve the others. Returns the rows indexed."""
    stmt = (
        select(agent_partitions.c.table_name, agent_partitions.c.partition_name)
        .where(agent_partitions.c.table_name.in_(STAGED_TABLES))
        .order_by(agent_partitions.c.table_name, agent_partitions.c.partition_name)
    )
    if only is not None:
        if not only:
            return 0
        pairs = tuple_(agent_partitions.c.table_name, agent_partitions.c.agent_id)
        stmt = stmt.where(pairs.in_(sorted(only)))
    async with db.connection() as conn:
        partitions = (await conn.execute(stmt)).all()
    total = 0
    for table, partition in partitions:
        statement, moved = text(_move_sql(table, partition)), 0
        while limit is None or moved < limit:
            size = batch if limit is None else min(batch, limit - moved)
            async with db.transaction() as conn:
                done = (await conn.execute(statement, {"n": size})).rowcount
            moved += done
            if done < size:
                break
        total += moved
    return total


class IndexWorker(PollingWorker):
    """Indexes staged rows in the background until :meth:`stop`: the agents the write
    paths noted (``Database.staged``) once their writes pause for
    ``StorageConfig.index_idle_s`` (so the HNSW inserts use the time an agent waits for its
    model, not the time of a turn; at the latest after ``index_poll_s``), and every promoted
    agent every ``index_poll_s`` (rows other processes staged, notes whose transaction had
    not committed yet)."""

    name = "memory-kernel-index-worker"

    def __init__(self, db: Database) -> None:
        super().__init__()
        self._db = db
        #: Rows indexed since start.
        self.indexed = 0

    async def run_once(self, only: set[tuple[str, str]] | None = None) -> int:
        """One round: up to eight batches of each partition (of ``only``'s agents)."""
        batch = self._db.config.index_batch
        done = await index_staged(self._db, batch=batch, limit=batch * 8, only=only)
        self.indexed += done
        return done

    async def _loop(self) -> None:
        only: set[tuple[str, str]] | None = None  # None: sweep every promoted agent
        while True:
            try:
                done = await self.run_once(only)
            except MemoryKernelError:
                _log.exception("index worker: round failed")
                done = 0
            if done:  # more may be waiting: drain before sleeping
                if only is not None:
                    only |= self._db.staged.take()
                continue
            cfg = self._db.config
            noted = await self._db.staged.wait(cfg.index_poll_s)
            if noted:  # let the burst finish: HNSW inserts then use the pause, not the turn
                await self._db.staged.wait_pause(cfg.index_idle_s, cfg.index_poll_s)
            only = self._db.staged.take() if noted else None
