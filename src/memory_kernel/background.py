"""A kernel-owned background task that polls: started by ``open``, stopped by ``close``.

The embedding worker (pending facts) and the index worker (staged rows) share this life
cycle: one asyncio task, a ``stop`` that cancels and waits, so ``close()`` never leaks a task.
"""

from __future__ import annotations

import asyncio
import contextlib
from abc import ABC, abstractmethod

__all__ = ["PollingWorker"]


class PollingWorker(ABC):
    """Runs :meth:`_loop` as one task until :meth:`stop`."""

    name = "memory-kernel-worker"

    def __init__(self) -> None:
        self._task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        """Start the background task (idempotent); needs a running event loop."""
        if self.running:
            return
        self._task = asyncio.get_running_loop().create_task(self._loop(), name=self.name)

    async def stop(self) -> None:
        """Cancel the task and wait for it; safe to call twice or before ``start``."""
        task, self._task = self._task, None
        if task is None:
            return
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    @abstractmethod
    async def _loop(self) -> None: ...
