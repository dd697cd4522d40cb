"""Fault tests own a private embedded server per module (they kill it), never the shared one."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from memory_kernel import MemoryKernel, MemoryKernelConfig
from memory_kernel.testing import FakeEmbedder, FrozenClock
from tests.conftest import QUIET


@pytest.fixture(scope="module")
async def private_kernel(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[MemoryKernel]:
    """A kernel that started its own embedded server; the background workers are off so
    the only statements on the engine are the ones under test."""
    data_dir: Path = tmp_path_factory.mktemp("faults") / "pg"
    config = MemoryKernelConfig.from_mapping(QUIET)
    kernel = await MemoryKernel.open(
        data_dir=data_dir, config=config, embedder=FakeEmbedder(), clock=FrozenClock()
    )
    try:
        yield kernel
    finally:
        server = kernel.embedded_server
        if server is not None:
            await server.ensure_running()  # a failed test may leave it dead
        await kernel.close()
