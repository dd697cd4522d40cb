"""The reconnect policy in isolation: idempotent reads are retried on connection failures
only, and a checkout refuses connections the server already closed."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, create_async_engine

from memory_kernel import ConnectionFailedError, MemoryKernel, ValidationError

pytestmark = pytest.mark.faults


async def test_read_retries_connection_failures_and_nothing_else(kernel: MemoryKernel) -> None:
    calls: list[int] = []

    async def flaky(conn: AsyncConnection) -> int:
        calls.append(1)
        if len(calls) < 3:
            raise ConnectionFailedError("server restarting")
        return int(await conn.scalar(text("SELECT 41 + 1")) or 0)

    assert await kernel.database.read(flaky) == 42 and len(calls) == 3

    async def bad(_conn: AsyncConnection) -> int:
        calls.append(1)
        raise ValidationError("not a connection problem")

    calls.clear()
    with pytest.raises(ValidationError):
        await kernel.database.read(bad)
    assert len(calls) == 1


async def test_connections_closed_by_the_server_are_replaced_on_checkout(
    kernel: MemoryKernel, pg_dsn: str
) -> None:
    db = kernel.database
    async with db.connection() as a, db.connection() as b:
        pids = [await c.scalar(text("SELECT pg_backend_pid()")) for c in (a, b)]
    # Another client ends both pooled backends, as a server restart would.
    outsider = create_async_engine(pg_dsn)
    try:
        async with outsider.connect() as conn:
            for pid in pids:
                await conn.scalar(text("SELECT pg_terminate_backend(:p)"), {"p": pid})
    finally:
        await outsider.dispose()
    await asyncio.sleep(0.1)  # the closed sockets reach asyncpg
    # Both pooled connections are dead; the checkout hands out live ones, no error.
    async with db.connection() as a, db.connection() as b:
        for conn in (a, b):
            assert await conn.scalar(text("SELECT 1")) == 1
            assert await conn.scalar(text("SELECT pg_backend_pid()")) not in pids


async def test_ensure_running_leaves_a_live_server_alone(private_kernel: MemoryKernel) -> None:
    server = private_kernel.embedded_server
    assert server is not None
    pid = server.pid
    assert await server.ensure_running() is False
    assert server.pid == pid
