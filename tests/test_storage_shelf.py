"""Connections kept between leases (``storage.shelf``): a lease gets the connection used
last without a pool checkout, and never one a caller changed or left in a transaction —
against real Postgres."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from sqlalchemy import event, text

from memory_kernel import MemoryKernel
from memory_kernel.storage import driver
from memory_kernel.storage.shelf import IDLE_SINCE, Shelf


async def _pid(conn: Any) -> int:
    return int(await conn.scalar(text("SELECT pg_backend_pid()")))


async def test_a_lease_gets_the_connection_used_last_without_a_checkout(
    quiet_kernel: MemoryKernel,
) -> None:
    db = quiet_kernel.database
    async with db.connection() as conn:
        first = await _pid(conn)
    checkouts: list[object] = []

    def count(*_: object) -> None:
        checkouts.append(1)

    pool = db.engine.sync_engine.pool
    event.listen(pool, "checkout", count)
    try:
        for _ in range(3):
            async with db.lean_transaction() as conn:
                (row,) = await driver.fetch(conn, "SELECT pg_backend_pid() AS pid", {})
                assert row.pid == first
            async with db.connection() as conn:
                assert await _pid(conn) == first
    finally:
        event.remove(pool, "checkout", count)
    assert checkouts == []
    assert db.leased == 0


async def test_a_read_hands_its_connection_back_outside_any_transaction(
    quiet_kernel: MemoryKernel,
) -> None:
    db = quiet_kernel.database
    async with db.connection() as conn:
        await conn.execute(text("SELECT 1"))  # SQLAlchemy begins a transaction implicitly
        assert conn.in_transaction()
    async with db.connection() as conn:
        assert not conn.in_transaction()
        assert not (await driver.driver(conn)).is_in_transaction()


async def test_a_connection_a_caller_switched_to_autocommit_is_not_kept(
    quiet_kernel: MemoryKernel,
) -> None:
    db = quiet_kernel.database
    async with db.transaction() as conn:
        await conn.execute(text("CREATE TABLE shelf_probe (x int)"))
    async with db.connection() as conn:
        await conn.execution_options(isolation_level="AUTOCOMMIT")

    async def write_then_fail() -> None:
        async with db.transaction() as conn:
            await conn.execute(text("INSERT INTO shelf_probe VALUES (1)"))
            raise RuntimeError("caller failed")

    for _ in range(db.config.pool_size + 1):  # whichever connection each lease gets
        with pytest.raises(RuntimeError):
            await write_then_fail()
    async with db.connection() as conn:
        assert await conn.scalar(text("SELECT count(*) FROM shelf_probe")) == 0


async def test_at_most_pool_size_connections_are_kept(quiet_kernel: MemoryKernel) -> None:
    db = quiet_kernel.database
    size = db.config.pool_size
    started, release = asyncio.Event(), asyncio.Event()
    holding: list[int] = []

    async def hold() -> None:
        async with db.connection() as conn:
            holding.append(await _pid(conn))
            if len(holding) == size + 2:
                started.set()
            await release.wait()

    tasks = [asyncio.create_task(hold()) for _ in range(size + 2)]
    await started.wait()
    assert db.leased == size + 2
    release.set()
    await asyncio.gather(*tasks)
    assert db.leased == 0
    pool: Any = db.engine.sync_engine.pool
    assert pool.checkedout() == size  # the shelf's; the overflow went back to the pool


async def test_a_connection_kept_too_long_goes_back_stamped_with_its_idle_time(
    quiet_kernel: MemoryKernel,
) -> None:
    shelf = Shelf(capacity=1, max_idle_s=0.0)
    conn = await quiet_kernel.database.engine.connect().start()
    shelved_at = time.monotonic()
    assert await shelf.keep(conn, shelf.generation)
    assert len(shelf) == 1
    await asyncio.sleep(0.01)
    assert await shelf.take() is None  # stale: checked in
    assert conn.closed and len(shelf) == 0
    # The pool's checkout check (which pings a connection idle for too long) counts from
    # the shelving, not from the check-in.
    async with quiet_kernel.database.engine.connect() as again:
        assert again.sync_connection is not None
        idle_since = again.sync_connection.connection.info[IDLE_SINCE]
    assert idle_since <= shelved_at + 0.005


async def test_a_connection_leased_before_a_clear_is_not_kept(quiet_kernel: MemoryKernel) -> None:
    shelf = Shelf(capacity=2, max_idle_s=60.0)
    conn = await quiet_kernel.database.engine.connect().start()
    generation = shelf.generation
    await shelf.clear()
    assert not await shelf.keep(conn, generation)
    assert await shelf.keep(conn, shelf.generation)
    assert await shelf.take() is conn
    await conn.close()
