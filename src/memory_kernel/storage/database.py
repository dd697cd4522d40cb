"""The engine, the unit of work, and what happens on open (extension, migrations, embedder).

Repositories take an ``AsyncConnection`` and never commit: the service that owns the unit of
work opens ``Database.transaction()``, which commits everything or nothing (invariant 4).
"""

from __future__ import annotations

import asyncio
import logging
import os
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from pgvector.asyncpg import register_vector
from sqlalchemy import event, select, text
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from memory_kernel.config import StorageConfig
from memory_kernel.errors import EmbedderMismatchError, ExtensionMissingError, MigrationError
from memory_kernel.storage import migrate
from memory_kernel.storage.embedded import EmbeddedServer
from memory_kernel.storage.errors import map_db_error, translate_db_errors
from memory_kernel.storage.tables import PARTITIONED_TABLES, kernel_meta
from memory_kernel.storage.url import normalise_dsn

__all__ = ["Database", "ServerInfo"]

_log = logging.getLogger(__name__)


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

    @classmethod
    async def open(
        cls, dsn: str | None, config: StorageConfig, *, data_dir: Path | None = None
    ) -> Database:
        """Connect to ``dsn`` (or ``MEMORY_KERNEL_DSN``, else the embedded server), create
        pgvector if missing and migrate to head. Nothing about the embedder is decided here."""
        dsn = dsn or os.environ.get("MEMORY_KERNEL_DSN") or None
        server = None if dsn is not None else await EmbeddedServer.start(data_dir)
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
        engine = create_async_engine(
            dsn,
            pool_size=config.pool_size,
            max_overflow=config.max_overflow,
            pool_pre_ping=True,
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
                    # Parallel workers make the small per-agent scans 2-3x slower.
                    "max_parallel_workers_per_gather": "0",
                    "application_name": "memory-kernel",
                },
            },
        )
        database = cls(engine, config, server)
        event.listen(engine.sync_engine, "connect", database._on_connect)
        return database

    def _on_connect(self, dbapi_connection: Any, _record: Any) -> None:
        # Before the extension exists (first open) there is no type to register; the pool
        # is disposed once it is created, so later connections get the codec.
        try:
            dbapi_connection.run_async(_register_vector)
        except ValueError:
            _log.debug("pgvector type not found yet; codec not registered")

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[AsyncConnection]:
        """One unit of work: commits on success, rolls back on any exception."""
        with translate_db_errors():
            async with self.engine.begin() as conn:
                yield conn

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[AsyncConnection]:
        """A connection for reads (autocommit-free, rolled back on exit)."""
        with translate_db_errors():
            async with self.engine.connect() as conn:
                yield conn

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


_locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
    weakref.WeakKeyDictionary()
)


def _migration_lock() -> asyncio.Lock:
    loop = asyncio.get_running_loop()
    lock = _locks.get(loop)
    if lock is None:
        lock = _locks[loop] = asyncio.Lock()
    return lock


async def _register_vector(connection: Any) -> None:
    await register_vector(connection)


def _current_revision(connection: Connection, schema: str) -> str | None:
    return migrate.current_revision(connection, schema)
