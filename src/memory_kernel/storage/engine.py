"""The SQLAlchemy engine of a store: its pool, its connection settings and checks."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from asyncpg.exceptions import InternalClientError
from pgvector.asyncpg import register_vector
from sqlalchemy import event
from sqlalchemy.exc import InvalidatePoolError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from memory_kernel.config import StorageConfig

__all__ = ["make_engine"]

_log = logging.getLogger(__name__)
# A pooled connection idle longer than this is pinged on checkout (see _on_checkout).
_PING_AFTER_IDLE_S = 5.0
# Where a connection record keeps the time its connection went back to the pool.
_IDLE_SINCE = "idle_since"


def make_engine(dsn: str, config: StorageConfig) -> AsyncEngine:
    """An asyncpg engine whose connections search the store's schema first, decode vectors
    as numpy arrays, and are checked before each checkout."""
    engine = create_async_engine(
        dsn,
        pool_size=config.pool_size,
        max_overflow=config.max_overflow,
        # The connection used last goes out first: it is the warmest (its prepared
        # statements, its server backend's caches), and idle ones age out together.
        pool_use_lifo=True,
        # Not SQLAlchemy's pre-ping (a round trip on every checkout): _on_checkout pings
        # only a connection idle long enough to have been cut silently.
        pool_pre_ping=False,
        connect_args={
            "timeout": config.connect_timeout_s,
            "server_settings": {
                "search_path": f'"{config.schema_name}", public',
                # Placeholders until pgvector loads, then picked up by it.
                "hnsw.ef_search": str(config.hnsw_ef_search),
                "hnsw.iterative_scan": "relaxed_order",
                # Generic plans cannot prove a partial index's predicate and, with many
                # partitions, silently fall back to seq scan + sort: always plan per call.
                "plan_cache_mode": "force_custom_plan",
                # Parallel workers make the small per-agent scans slower, not faster.
                "max_parallel_workers_per_gather": "0",
                "application_name": "memory-kernel",
            },
        },
    )
    event.listen(engine.sync_engine, "connect", _on_connect)
    event.listen(engine.sync_engine.pool, "checkout", _on_checkout)
    event.listen(engine.sync_engine.pool, "checkin", _on_checkin)
    return engine


def _on_connect(dbapi_connection: Any, _record: Any) -> None:
    # Before the extension exists (first open) there is no type to register; the pool
    # is disposed once it is created, so later connections get the codec.
    try:
        dbapi_connection.run_async(_register_vector)
    except ValueError:
        _log.debug("pgvector type not found yet; codec not registered")


def _on_checkin(_dbapi_connection: Any, record: Any) -> None:
    if record is not None:
        record.info[_IDLE_SINCE] = time.monotonic()


def _on_checkout(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
    """Hand out only live connections, without a round trip on the hot path.

    A server that died (or restarted) closes its sockets, and asyncpg sees that at once:
    such a connection is refused and the whole pool is invalidated, since its other
    connections went with the same server. A connection idle longer than
    ``_PING_AFTER_IDLE_S`` may have been cut silently (a network drop sends nothing), so it
    is pinged. The pool replaces a refused connection with a new one (SQLAlchemy retries).
    """
    driver = dbapi_connection.driver_connection
    if driver is None or driver.is_closed():
        raise InvalidatePoolError("the server closed this connection")
    idle_since = record.info.get(_IDLE_SINCE)
    if idle_since is not None and time.monotonic() - idle_since > _PING_AFTER_IDLE_S:
        try:
            dbapi_connection.ping()
        except Exception as exc:
            raise InvalidatePoolError(f"ping failed: {exc}") from exc


async def _register_vector(connection: Any) -> None:
    try:
        await register_vector(connection)
    except InternalClientError as exc:
        # Cancelled while asyncpg introspects the type, the protocol is left mid-operation and
        # the next step raises this instead of CancelledError: give the caller its cancellation
        # back (the pool discards the half-set-up connection either way).
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise asyncio.CancelledError from exc
        raise
