"""The embedded default: no DSN starts a real PostgreSQL + pgvector in a data directory."""

from __future__ import annotations

import uuid
from pathlib import Path

import psutil
import pytest
from sqlalchemy import text

from memory_kernel import MemoryKernel, MemoryKernelConfig
from memory_kernel.config import StorageConfig
from memory_kernel.storage import embedded
from memory_kernel.storage.embedded import embedded_settings


def _alive(pid: int) -> bool:
    # A stopped postmaster may linger as a zombie until its parent reaps it.
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False


async def _count(kernel: MemoryKernel) -> int:
    async with kernel.database.connection() as conn:
        value = await conn.scalar(text("SELECT count(*) FROM memory_events"))
    return int(value or 0)


async def _write_event(kernel: MemoryKernel) -> None:
    async with kernel.database.transaction() as conn:
        await conn.execute(
            text(
                "INSERT INTO memory_events (agent_id, id, memory_kind, memory_id, event,"
                " decided_by, created_at) VALUES ('a', :id, 'fact', :id, 'learned', 'caller',"
                " now())"
            ),
            {"id": uuid.uuid4()},
        )


async def test_data_survives_close_and_reopen_and_close_stops_the_server(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "pg"
    async with MemoryKernel.open(data_dir=data_dir) as kernel:
        server = kernel.embedded_server
        assert server is not None and server.data_dir == data_dir.resolve()
        pid = server.pid
        assert pid is not None and _alive(pid)
        await _write_event(kernel)
        assert await _count(kernel) == 1
    assert not _alive(pid), "close must stop the server it started"

    async with MemoryKernel.open(data_dir=data_dir) as kernel:
        assert await _count(kernel) == 1, "data must survive close/reopen"


async def test_close_stops_only_what_nobody_else_uses(tmp_path: Path) -> None:
    data_dir = tmp_path / "shared"
    first = await MemoryKernel.open(data_dir=data_dir)
    second = await MemoryKernel.open(data_dir=data_dir)
    try:
        assert first.embedded_server is not None
        pid = first.embedded_server.pid
        await first.close()
        assert pid is not None and _alive(pid)
        await _write_event(second)  # the second kernel's server is still serving
        assert await _count(second) == 1
    finally:
        await second.close()
    assert not _alive(pid)


async def test_a_dsn_kernel_starts_no_server(kernel: MemoryKernel) -> None:
    assert kernel.embedded_server is None


async def _setting(kernel: MemoryKernel, name: str) -> str:
    async with kernel.database.connection() as conn:
        return str(await conn.scalar(text("SELECT current_setting(:name)"), {"name": name}))


def _buffers(mb: int) -> MemoryKernelConfig:
    return MemoryKernelConfig.from_mapping({"storage": {"embedded_shared_buffers_mb": mb}})


async def test_the_server_runs_with_the_configured_memory(tmp_path: Path) -> None:
    data_dir = tmp_path / "pg"
    # A new data directory gets the settings between initdb and its first start.
    async with MemoryKernel.open(data_dir=data_dir, config=_buffers(48)) as kernel:
        assert await _setting(kernel, "shared_buffers") == "48MB"
        async with kernel.database.connection() as conn:
            auto = await conn.execution_options(isolation_level="AUTOCOMMIT")
            await auto.execute(text("ALTER SYSTEM SET effective_cache_size = '1234MB'"))
    async with MemoryKernel.open(data_dir=data_dir, config=_buffers(64)) as kernel:
        assert await _setting(kernel, "shared_buffers") == "64MB", "a reopen applies a change"
        assert await _setting(kernel, "effective_cache_size") == "1234MB", "ALTER SYSTEM wins"


def test_auto_sized_memory_is_bounded(tmp_path: Path) -> None:
    settings = embedded_settings(StorageConfig(), tmp_path)
    shared = int(settings["shared_buffers"].removesuffix("MB"))
    assert 128 <= shared <= 2048
    assert int(settings["effective_cache_size"].removesuffix("MB")) >= shared
    assert "io_method" not in settings, "no PG_VERSION: a setting older servers lack stays out"


async def test_settings_the_server_refuses_fall_back_to_stock_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(embedded, "embedded_settings", lambda *_: {"shared_buffers": "not a size"})
    data_dir = tmp_path / "pg"
    for _ in range(2):  # a new data directory, then an existing one
        async with MemoryKernel.open(data_dir=data_dir) as kernel:
            assert await _setting(kernel, "shared_buffers") == "128MB"
            await _write_event(kernel)
    async with MemoryKernel.open(data_dir=data_dir) as kernel:
        assert await _count(kernel) == 2
