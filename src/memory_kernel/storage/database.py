"""The engine, the unit of work, and what happens on open (extension, migrations, embedder).

Stores take an ``AsyncConnection`` and never commit: every public call runs in
``Database.transaction()``, which commits everything or nothing (invariant 4); a call made
inside another one's unit of work joins it (a context variable carries the open unit).
"""

from __future__ import annotations

import asyncio
import logging
import os
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar, cast

from sqlalchemy import select, text
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from sqlalchemy.pool import QueuePool
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_exponential

from memory_kernel.config import StorageConfig
from memory_kernel.errors import (
    ConnectionFailedError,
    EmbedderMismatchError,
    ExtensionMissingError,
    MigrationError,
)
from memory_kernel.storage import migrate
from memory_kernel.storage.embedded import EmbeddedServer
from memory_kernel.storage.engine import make_engine
from memory_kernel.storage.errors import map_db_error, translate_db_errors
from memory_kernel.storage.staging import StagedNotes
from memory_kernel.storage.tables import PARTITIONED_TABLES, kernel_meta
from memory_kernel.storage.url import normalise_dsn

__all__ = ["Database", "ServerInfo"]

_log = logging.getLogger(__name__)
T = TypeVar("T")
# Connection attempts per checkout (and per idempotent read): backoff 0.05, 0.1, 0.2, 0.4 s,
# so a call during an outage fails in under a second instead of hanging.
_CONNECT_ATTEMPTS = 5
_CONNECT_BACKOFF_S = 0.05


@dataclass(frozen=True, slots=True)
class _Unit:
    """An open unit of work: its connection, whether nested units are savepoints, and the
    task that opened it."""

    conn: AsyncConnection
    savepoints: bool
    task: asyncio.Task[Any] | None


@dataclass(frozen=True, slots=True)
class ServerInfo:
    postgres_version: str
    pgvector_version: str | None
    schema_revision: str | None
    embedder_name: str | None
    embedder_dim: int | None


class Database:
    """Owns the engine of one store (one DSN + schema)."""

    def __init__(
        self, engine: AsyncEngine, config: StorageConfig, server: EmbeddedServer | None = None
    ) -> None:
        self.engine = engine
        self.config = config
        self.schema = config.schema_name
        self.server = server
        # Callers queue here, first come first served, for one of the pool's connections.
        # The pool's own wait is not fair under load (a returned connection goes to whoever
        # asks next, not to the longest waiter): with 100 busy agents some waited out the
        # 30 s pool timeout while the median turn took 0.7 s (benchmarks/load.py).
        self._gate = asyncio.Semaphore(config.pool_size + config.max_overflow)
        #: The unit of work open in this context (``transaction``), per store.
        self._unit: ContextVar[_Unit | None] = ContextVar(f"mk-unit-{id(self)}", default=None)
        #: Agents that may have new staged rows, for the index worker.
        self.staged = StagedNotes()

    @classmethod
    async def open(
        cls, dsn: str | None, config: StorageConfig, *, data_dir: Path | None = None
    ) -> Database:
        """Connect to ``dsn`` (or ``MEMORY_KERNEL_DSN``, else the embedded server), create
        pgvector if missing and migrate to head. Nothing about the embedder is decided here."""
        dsn = dsn or os.environ.get("MEMORY_KERNEL_DSN") or None
        server = None if dsn is not None else await EmbeddedServer.start(data_dir, config)
        url = normalise_dsn(dsn) if dsn is not None else server.dsn  # type: ignore[union-attr]
        database = cls.create(url, config, server=server)
        try:
            await database._ensure_extension()
            await database._migrate()
        except BaseException:
            await database.close()
            raise
        return database

    @classmethod
    def create(
        cls, dsn: str, config: StorageConfig, *, server: EmbeddedServer | None = None
    ) -> Database:
        return cls(make_engine(dsn, config), config, server)

    @property
    def leased(self) -> int:
        """Pool connections held by units of work and reads in progress: 0 when no call is
        running, so a leaked connection shows here."""
        pool = cast(QueuePool, self.engine.sync_engine.pool)
        return pool.checkedout()

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[AsyncConnection]:
        """The unit of work: commits on success, rolls back on any exception.

        A call made inside an open unit of the same task joins it:
        same connection, same transaction, so a public call nested in another one (``post_turn``
        learning a fact) commits or rolls back with it. Inside a :meth:`rehearse` block a
        nested unit is a savepoint, so a failed one leaves nothing, as a failed real
        transaction would."""
        unit = self._current()
        if unit is not None:
            if unit.savepoints:
                with translate_db_errors():
                    async with unit.conn.begin_nested():
                        yield unit.conn
            else:
                yield unit.conn
            return
        async with self._lease() as conn, conn.begin():
            async with self._opened(conn, savepoints=False):
                yield conn

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[AsyncConnection]:
        """A connection for reads (rolled back on exit); inside a unit of work, the unit's,
        so a read sees what the unit wrote."""
        unit = self._current()
        if unit is not None:
            yield unit.conn
            return
        async with self._lease() as conn:
            yield conn

    @asynccontextmanager
    async def rehearse(self) -> AsyncIterator[AsyncConnection]:
        """A unit of work that is always rolled back, whose nested units are savepoints:
        everything run inside it happens, is seen by what follows, and is then undone
        (``consolidate(dry_run=True)``)."""
        if self._current() is not None:
            raise RuntimeError("a rehearsal cannot run inside another unit of work")
        async with self._lease() as conn:
            outer = await conn.begin()
            try:
                async with self._opened(conn, savepoints=True):
                    yield conn
            finally:
                await outer.rollback()

    def _current(self) -> _Unit | None:
        # Only the task that opened a unit joins it: a task started inside it (a background
        # worker, a host's concurrent call) gets a unit of its own, never a connection that
        # another task is using or a transaction that may end under it.
        unit = self._unit.get()
        if unit is None or unit.task is not asyncio.current_task():
            return None
        return unit

    @asynccontextmanager
    async def _opened(self, conn: AsyncConnection, *, savepoints: bool) -> AsyncIterator[None]:
        token = self._unit.set(_Unit(conn, savepoints, asyncio.current_task()))
        try:
            yield
        finally:
            self._unit.reset(token)

    @asynccontextmanager
    async def _lease(self) -> AsyncIterator[AsyncConnection]:
        """A pooled connection held for the block, errors mapped; waiters served in order."""
        with translate_db_errors():
            async with self._gate:
                conn = await self._checkout()
                try:
                    yield conn
                finally:
                    await conn.close()

    async def read(self, fn: Callable[[AsyncConnection], Awaitable[T]], /) -> T:
        """Run an idempotent read, retried with backoff when the connection fails midway
        (a restarted or failed-over server); other errors are raised at once. Inside a unit
        of work it runs once, on the unit's connection."""
        if self._current() is not None:
            async with self.connection() as conn:
                return await fn(conn)
        async for attempt in _retrying():
            with attempt:
                async with self.connection() as conn:
                    return await fn(conn)
        raise AssertionError("unreachable: tenacity either returns or re-raises")

    async def _checkout(self) -> AsyncConnection:
        """A pooled connection, retried with backoff while the server cannot be reached.

        Nothing has been sent yet, so a retry is safe for writes too. The checkout check
        (``_on_checkout``) replaces connections that died with a restarted server, so a
        restart costs callers nothing once the server is back; a call made while it is down
        fails within about a second with ``ConnectionFailedError``.
        """
        try:
            # The first attempt outside tenacity: its machinery would cost every checkout of
            # every turn something, for the rare case that the server is away.
            return await self._connect()
        except ConnectionFailedError:
            await asyncio.sleep(_CONNECT_BACKOFF_S)
        async for attempt in _retrying(_CONNECT_ATTEMPTS - 1):
            with attempt:
                return await self._connect()
        raise AssertionError("unreachable: tenacity either returns or re-raises")

    async def _connect(self) -> AsyncConnection:
        try:
            return await self.engine.connect().start()
        except Exception as exc:
            raise map_db_error(exc) from exc

    async def close(self) -> None:
        """Release the connections, and the embedded server if this store started one."""
        try:
            await self.engine.dispose()
        finally:
            if self.server is not None:
                await self.server.stop()

    async def _ensure_extension(self) -> None:
        async with self.connection() as conn:
            installed = await conn.scalar(
                text("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            )
            if installed is not None:
                return
            try:
                await conn.execute(text("CREATE EXTENSION IF NOT EXISTS vector WITH SCHEMA public"))
                await conn.commit()
                await self.engine.dispose()
            except Exception as exc:
                mapped = map_db_error(exc)
                raise ExtensionMissingError(
                    "the pgvector extension is not installed in this database and could not be "
                    f"created ({mapped}); install pgvector on the server or ask a superuser to "
                    "run CREATE EXTENSION vector"
                ) from exc

    async def _migrate(self) -> None:
        head = migrate.head_revision()
        try:
            async with self.connection() as conn:
                if await conn.run_sync(_current_revision, self.schema) == head:
                    return  # the common case: no lock, no Alembic
            # Alembic keeps its context in module globals, so migrations inside one process
            # run one at a time; across processes env.py takes an advisory lock.
            async with _migration_lock(), self.transaction() as conn:
                await conn.run_sync(migrate.upgrade, self.schema)
        except Exception as exc:
            raise MigrationError(f"cannot migrate schema {self.schema!r} to head: {exc}") from exc

    async def bind_embedder(self, name: str, dim: int, now: datetime) -> None:
        """Record the embedder on first use; afterwards refuse any other (invariant 5)."""
        async with self.transaction() as conn:
            # Serialise first opens so two processes cannot record different embedders.
            await conn.execute(text("LOCK TABLE kernel_meta IN SHARE ROW EXCLUSIVE MODE"))
            row = (await conn.execute(select(kernel_meta).where(kernel_meta.c.id == 1))).first()
            if row is not None and row.embedder_name is not None:
                if row.embedder_name != name or row.embedder_dim != dim:
                    raise EmbedderMismatchError(
                        stored_name=row.embedder_name,
                        stored_dim=row.embedder_dim,
                        given_name=name,
                        given_dim=dim,
                    )
                return
            # First open of this store: fix the vector dimension in the column types, so the
            # database itself refuses vectors of any other size.
            for table in PARTITIONED_TABLES:
                await conn.execute(
                    text(f"ALTER TABLE {table} ALTER COLUMN embedding TYPE vector({int(dim)})")
                )
            await conn.execute(
                kernel_meta.insert().values(
                    id=1, embedder_name=name, embedder_dim=dim, created_at=now, updated_at=now
                )
            )

    async def server_info(self) -> ServerInfo:
        async with self.connection() as conn:
            version = await conn.scalar(text("SHOW server_version"))
            vector = await conn.scalar(
                text("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            )
            revision = await conn.run_sync(_current_revision, self.schema)
            meta = None
            if revision is not None:
                meta = (await conn.execute(select(kernel_meta))).first()
        return ServerInfo(
            postgres_version=str(version),
            pgvector_version=None if vector is None else str(vector),
            schema_revision=revision,
            embedder_name=None if meta is None else meta.embedder_name,
            embedder_dim=None if meta is None else meta.embedder_dim,
        )


def _retrying(attempts: int = _CONNECT_ATTEMPTS) -> AsyncRetrying:
    return AsyncRetrying(
        stop=stop_after_attempt(attempts),
        wait=wait_exponential(multiplier=_CONNECT_BACKOFF_S, max=1.0),
        retry=retry_if_exception_type(ConnectionFailedError),
        reraise=True,
    )


_locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
    weakref.WeakKeyDictionary()
)


def _migration_lock() -> asyncio.Lock:
    loop = asyncio.get_running_loop()
    lock = _locks.get(loop)
    if lock is None:
        lock = _locks[loop] = asyncio.Lock()
    return lock


def _current_revision(connection: Connection, schema: str) -> str | None:
    return migrate.current_revision(connection, schema)
