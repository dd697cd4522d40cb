"""Which agents may have new staged rows: the write paths note them, the index worker takes them.

In-process only (one per ``Database``): rows staged by other processes are found by the
worker's periodic sweep (``storage/indexer.py``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

__all__ = ["StagedNotes"]


class StagedNotes:
    """(table, agent) pairs noted since the worker last took them, and a way to wait for
    the next note or for a pause in the notes."""

    def __init__(self) -> None:
        self._pairs: set[tuple[str, str]] = set()
        self._event = asyncio.Event()
        self._count = 0  # notes ever made: lets the worker see a write burst go on

    def note(self, table: str, agent_ids: Iterable[str]) -> None:
        """``agent_ids`` may have new staged rows in ``table``."""
        self._pairs.update((table, a) for a in agent_ids)
        self._count += 1
        self._event.set()

    def take(self) -> set[tuple[str, str]]:
        """The pairs noted since the last call (and forget them)."""
        taken, self._pairs = self._pairs, set()
        self._event.clear()
        return taken

    async def wait(self, timeout_s: float) -> bool:
        """Wait until something is noted; ``False`` when ``timeout_s`` passed first."""
        try:
            async with asyncio.timeout(timeout_s):
                await self._event.wait()
        except TimeoutError:
            return False
        return True

    async def wait_pause(self, idle_s: float, at_most_s: float) -> None:
        """Return once nothing was noted for ``idle_s`` (or after ``at_most_s``)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + at_most_s
        while (left := deadline - loop.time()) > 0:
            seen = self._count
            await asyncio.sleep(min(idle_s, left))
            if self._count == seen:
                return
