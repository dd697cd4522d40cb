"""Passive prefetch: after a turn, recall memories for the *next* turn in the background.

The seed's passive streaming: the last two turns are embedded and searched while the user
reads and types; the next ``pre_turn`` of the session uses the result if it is fresh
(``prefetch_ttl_s``) instead of waiting for the database.

Bounded: at most ``max_tasks`` prefetches run at once (more are skipped, not queued) and the
cache keeps the ``max_sessions`` most recent sessions. A newer turn of the same session
cancels the session's older prefetch. Cancel-safe: a cancelled or failed prefetch stores
nothing. ``close()`` cancels and awaits every task, so none outlives the kernel.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from memory_kernel.models.context import NodeContent
from memory_kernel.protocols import Clock

__all__ = ["PrefetchEntry", "Prefetcher"]

_log = logging.getLogger(__name__)

Key = tuple[str, str]
Fetch = Callable[[str, str], Awaitable[dict[str, NodeContent]]]


@dataclass(frozen=True, slots=True)
class PrefetchEntry:
    query: str
    sections: dict[str, NodeContent]
    created_at: datetime


class Prefetcher:
    """Per-session cache of background recalls. ``fetch(agent_id, query)`` does the recall."""

    def __init__(
        self,
        fetch: Fetch,
        *,
        clock: Clock,
        ttl_s: float,
        max_sessions: int,
        max_tasks: int,
    ) -> None:
        self._fetch = fetch
        self._clock = clock
        self._ttl = timedelta(seconds=ttl_s)
        self._max_sessions = max_sessions
        self._max_tasks = max_tasks
        self._tasks: dict[Key, asyncio.Task[None]] = {}
        self._cache: OrderedDict[Key, PrefetchEntry] = OrderedDict()
        self._closed = False
        self.skipped = 0  # prefetches not started because max_tasks were running

    @property
    def running(self) -> int:
        return len(self._tasks)

    def schedule(self, *, agent_id: str, session_id: str, turns: Sequence[str]) -> bool:
        """Start recalling for the session's next turn from ``turns`` (the last two turns).
        Returns whether a prefetch was started."""
        query = "\n".join(t for t in turns if t.strip())
        if self._closed or not query:
            return False
        key = (agent_id, session_id)
        older = self._tasks.pop(key, None)
        if older is not None:
            older.cancel()  # superseded by the newer turn
        if len(self._tasks) >= self._max_tasks:
            self.skipped += 1
            _log.debug("prefetch skipped: %d already running", len(self._tasks))
            return False
        self._cache.pop(key, None)  # the previous turn's recall is stale now
        task = asyncio.create_task(self._run(key, query), name=f"memory-kernel prefetch {key}")
        self._tasks[key] = task
        task.add_done_callback(lambda t: self._forget(key, t))
        return True

    def _forget(self, key: Key, task: asyncio.Task[None]) -> None:
        if self._tasks.get(key) is task:
            del self._tasks[key]

    async def _run(self, key: Key, query: str) -> None:
        try:
            sections = await self._fetch(key[0], query)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a background recall must never break the host
            _log.warning("prefetch failed for session %s: %s", key[1], exc)
            return
        self._cache[key] = PrefetchEntry(query, sections, self._clock.now())
        self._cache.move_to_end(key)
        while len(self._cache) > self._max_sessions:
            self._cache.popitem(last=False)

    def take(self, agent_id: str, session_id: str) -> PrefetchEntry | None:
        """The session's prefetched recall if it is fresh (consumed: used by one turn)."""
        entry = self._cache.pop((agent_id, session_id), None)
        if entry is None or self._clock.now() - entry.created_at > self._ttl:
            return None
        return entry

    async def discard(self, agent_id: str) -> None:
        """Cancel the agent's prefetches and drop what was prefetched for it (its memories
        were erased: nothing recalled before must serve a later turn)."""
        tasks = [self._tasks.pop(key) for key in list(self._tasks) if key[0] == agent_id]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for key in [key for key in self._cache if key[0] == agent_id]:
            del self._cache[key]

    async def wait(self) -> None:
        """Wait for the running prefetches (tests, evaluation, graceful shutdown)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks.values()), return_exceptions=True)

    async def close(self) -> None:
        """Cancel and await every prefetch; later ``schedule`` calls do nothing."""
        self._closed = True
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks.clear()
        self._cache.clear()
