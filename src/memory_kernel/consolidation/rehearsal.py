"""A dry run is the real run, rehearsed inside one transaction that is rolled back.

Later phases depend on what earlier ones wrote: a pending fact embedded first may merge
into a known fact, which then is fresh evidence and does not decay; a decayed fact may
fall below the deprecation threshold; a merge moves the survivor's confidence. Predicting
all of that without writing would duplicate every phase's logic (and drift from it). So a
dry run executes the very same code on one connection: each unit of work becomes a
savepoint of one outer transaction, every later phase sees what the earlier ones wrote,
and at the end the outer transaction is rolled back. Its report is the real run's report
on the same data at the same clock, and nothing is kept.

Costs, said plainly: the dry run calls the embedder (pending facts, rewritten merge
contents) but never the judge; its writes take row locks and the agent's fact lock
(``mk-facts:<agent>``) until the rollback, so a ``learn`` for that agent waits for the
dry run to end; and the rolled-back rows leave dead tuples for autovacuum, as a real run
leaves the old row versions.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from sqlalchemy.ext.asyncio import AsyncConnection

from memory_kernel.heart.facts.service import FactService
from memory_kernel.runtime import Runtime
from memory_kernel.storage.database import Database
from memory_kernel.storage.errors import translate_db_errors

__all__ = ["rehearsal"]


class _PinnedDatabase(Database):
    """Every unit of work on one connection inside an open transaction, as a savepoint.

    ``transaction()`` releases its savepoint on success (later reads see the writes) and
    rolls back to it on an error, as a failed real transaction leaves nothing. ``connection()``
    is for reads and always rolls back to its savepoint, like the real read connection's
    transaction, so transaction-local settings (``hnsw.ef_search``) end with it.
    """

    def __init__(self, base: Database, conn: AsyncConnection) -> None:
        super().__init__(base.engine, base.config, None)
        self._conn = conn

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[AsyncConnection]:
        with translate_db_errors():
            async with self._conn.begin_nested():
                yield self._conn

    @asynccontextmanager
    async def lean_transaction(self, opening: Sequence[str] = ()) -> AsyncIterator[AsyncConnection]:
        # Never the driver's BEGIN/COMMIT here: that COMMIT would keep the rehearsal.
        async with self.transaction() as conn:
            for statement in opening:
                await conn.exec_driver_sql(statement)
            yield conn

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[AsyncConnection]:
        with translate_db_errors():
            savepoint = await self._conn.begin_nested()
            try:
                yield self._conn
            finally:
                await savepoint.rollback()

    async def close(self) -> None:
        raise RuntimeError("a rehearsal's database belongs to the store; it is never closed")


@asynccontextmanager
async def rehearsal(rt: Runtime) -> AsyncIterator[tuple[Runtime, FactService]]:
    """A runtime and fact service whose every write is rolled back when the block ends."""
    async with rt.db.connection() as conn:
        outer = await conn.begin()
        try:
            pinned = dataclasses.replace(rt, db=_PinnedDatabase(rt.db, conn))
            yield pinned, FactService(pinned)
        finally:
            await outer.rollback()
