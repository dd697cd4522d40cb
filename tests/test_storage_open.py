"""Opening a store: extension, migrations, embedder binding, error mapping — on real Postgres."""

from __future__ import annotations

import socket
import uuid

import numpy as np
import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine

from memory_kernel import (
    ConfigError,
    ConflictError,
    ConnectionFailedError,
    EmbedderMismatchError,
    ExtensionMissingError,
    MemoryKernel,
    RuleExtractor,
    StorageError,
    ValidationError,
)
from memory_kernel.storage.migrate import head_revision
from memory_kernel.testing import FakeEmbedder, FrozenClock
from tests.conftest import schema_config


async def test_open_migrates_to_head_and_records_embedder(kernel: MemoryKernel) -> None:
    info = await kernel.info()
    assert info.schema_revision == head_revision()
    assert info.pgvector_version is not None
    assert info.postgres_version.split(".")[0].isdigit()
    assert info.embedder_name == kernel.embedder.name
    assert info.embedder_dim == kernel.embedder.dim == 512  # the default embedder


async def test_reopen_with_other_dimension_fails_and_writes_nothing(
    pg_dsn: str, drop_schema: str
) -> None:
    config = schema_config(drop_schema)
    async with MemoryKernel.open(pg_dsn, config=config, embedder=FakeEmbedder(384)):
        pass
    with pytest.raises(EmbedderMismatchError) as caught:
        await MemoryKernel.open(pg_dsn, config=config, embedder=FakeEmbedder(64, name="other-64"))
    message = str(caught.value)
    assert "other-64" in message and "64" in message
    assert "hashing" in message and "384" in message
    async with MemoryKernel.open(pg_dsn, config=config, embedder=FakeEmbedder(384)) as again:
        info = await again.info()
    assert (info.embedder_name, info.embedder_dim) == (FakeEmbedder(384).name, 384)


async def test_same_dimension_other_name_is_also_refused(pg_dsn: str, drop_schema: str) -> None:
    config = schema_config(drop_schema)
    async with MemoryKernel.open(pg_dsn, config=config, embedder=FakeEmbedder(384)):
        pass
    with pytest.raises(EmbedderMismatchError):
        await MemoryKernel.open(pg_dsn, config=config, embedder=FakeEmbedder(384, name="st:x"))


async def test_database_refuses_vectors_of_another_dimension(kernel: MemoryKernel) -> None:
    wrong = np.full(10, 0.1, dtype=np.float32)
    with pytest.raises(ValidationError):
        async with kernel.database.transaction() as conn:
            await conn.execute(
                text(
                    "INSERT INTO facts (agent_id, id, content, confidence, status, embedding,"
                    " last_evidence_at, valid_from, created_at, updated_at)"
                    " VALUES ('a', :id, 'x', 0.5, 'active', CAST(:v AS vector), now(), now(),"
                    " now(), now())"
                ),
                {"id": uuid.uuid4(), "v": wrong},
            )


async def test_one_active_fact_per_subject_is_enforced_by_the_database(
    kernel: MemoryKernel,
) -> None:
    insert = text(
        "INSERT INTO facts (agent_id, id, subject, subject_key, content, confidence, status,"
        " last_evidence_at, valid_from, created_at, updated_at)"
        " VALUES (:agent, :id, 'S', 's', 'x', 0.5, :status, now(), now(), now(), now())"
    )
    async with kernel.database.transaction() as conn:
        await conn.execute(insert, {"agent": "a", "id": uuid.uuid4(), "status": "active"})
        # Superseded history and other agents do not count against the index.
        await conn.execute(insert, {"agent": "a", "id": uuid.uuid4(), "status": "superseded"})
        await conn.execute(insert, {"agent": "b", "id": uuid.uuid4(), "status": "active"})
    with pytest.raises(ConflictError):
        async with kernel.database.transaction() as conn:
            await conn.execute(insert, {"agent": "a", "id": uuid.uuid4(), "status": "active"})
    async with kernel.database.connection() as conn:
        count = await conn.scalar(text("SELECT count(*) FROM facts WHERE agent_id = 'a'"))
    assert count == 2


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


async def test_wrong_dsn_gives_a_clear_connection_error() -> None:
    dsn = f"postgresql://nobody@127.0.0.1:{_free_port()}/nothing"
    with pytest.raises(ConnectionFailedError, match="connection"):
        await MemoryKernel.open(dsn)


async def test_unknown_database_gives_a_clear_error(pg_dsn: str) -> None:
    dsn = make_url(pg_dsn).set(database="no_such_db_here").render_as_string(hide_password=False)
    with pytest.raises(StorageError, match="no_such_db_here"):
        await MemoryKernel.open(dsn)


async def test_non_postgres_dsn_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="PostgreSQL"):
        await MemoryKernel.open("mysql://root@localhost/db")


@pytest.mark.parametrize(
    "plugin",
    [
        {"extractor": "rules"},
        {"extractor": RuleExtractor},  # the class, not an instance
        {"summariser": FakeEmbedder()},  # another kind of plug-in
        {"judge": object()},
        {"embedder": "hashing"},
    ],
    ids=["extractor-str", "extractor-class", "summariser-embedder", "judge-object", "embedder"],
)
async def test_a_wrong_plug_in_is_a_config_error_before_anything_starts(
    plugin: dict[str, object],
) -> None:
    # The DSN would fail too, later: the plug-ins are checked before any connection.
    with pytest.raises(ConfigError, match=f"{next(iter(plugin))} must be"):
        await MemoryKernel.open("postgresql://nobody@127.0.0.1:1/none", **plugin)  # type: ignore[arg-type]


async def test_missing_pgvector_gives_a_clear_error(pg_dsn: str) -> None:
    """A non-superuser on a database without pgvector cannot create it: say so clearly."""
    suffix = uuid.uuid4().hex[:8]
    db_name, role = f"novector_{suffix}", f"plain_{suffix}"
    admin = create_async_engine(pg_dsn, isolation_level="AUTOCOMMIT")
    try:
        async with admin.connect() as conn:
            await conn.execute(text(f'CREATE ROLE "{role}" LOGIN'))
            await conn.execute(text(f'CREATE DATABASE "{db_name}" OWNER "{role}"'))
        dsn = (
            make_url(pg_dsn)
            .set(database=db_name, username=role, password=None)
            .render_as_string(hide_password=False)
        )
        with pytest.raises(ExtensionMissingError, match="pgvector"):
            await MemoryKernel.open(dsn)
    finally:
        async with admin.connect() as conn:
            await conn.execute(text(f'DROP DATABASE IF EXISTS "{db_name}" WITH (FORCE)'))
            await conn.execute(text(f'DROP ROLE IF EXISTS "{role}"'))
        await admin.dispose()


async def test_frozen_clock_is_used_for_meta(pg_dsn: str, drop_schema: str) -> None:
    clock = FrozenClock()
    async with MemoryKernel.open(pg_dsn, config=schema_config(drop_schema), clock=clock) as k:
        async with k.database.connection() as conn:
            created = await conn.scalar(text("SELECT created_at FROM kernel_meta"))
    assert created == clock.now()
