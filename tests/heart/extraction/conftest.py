"""A kernel with the deterministic FakeExtractor and no background workers: the tests drain
the extraction queue themselves (``extract_pending``, ``consolidate``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import select

from memory_kernel import MemoryKernel, MemoryKernelConfig
from memory_kernel.storage.tables import extraction_queue
from memory_kernel.testing import FakeEmbedder, FakeExtractor, FrozenClock
from tests.conftest import QUIET, schema_config


def queue_config(schema: str, **extraction: object) -> MemoryKernelConfig:
    """A config on ``schema`` without background workers (the extraction worker off unless
    ``worker=True``), with these ``extraction`` settings."""
    return schema_config(
        schema,
        storage=dict(QUIET["storage"]),
        consolidation=dict(QUIET["consolidation"]),
        extraction={"worker": False, **extraction},
    )


@pytest.fixture
def extractor() -> FakeExtractor:
    return FakeExtractor()


@pytest.fixture
async def xkernel(
    pg_dsn: str,
    drop_schema: str,
    clock: FrozenClock,
    embedder: FakeEmbedder,
    extractor: FakeExtractor,
) -> AsyncIterator[MemoryKernel]:
    config = queue_config(drop_schema)
    async with MemoryKernel.open(
        pg_dsn, config=config, clock=clock, embedder=embedder, extractor=extractor
    ) as kernel:
        yield kernel


async def queue_rows(kernel: MemoryKernel) -> list[Any]:
    q = extraction_queue.c
    async with kernel.database.connection() as conn:
        return list(
            (await conn.execute(select(extraction_queue).order_by(q.enqueued_at, q.turn_id))).all()
        )
