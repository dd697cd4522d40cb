"""Erasure: ``forget`` memories by id, ``forget_session``, ``erase_agent``.

Each call is one transaction: everything it erases goes together, or nothing does (an id
that is no memory of the agent fails the call before anything is deleted). What goes with
each memory is ``policy``'s; the SQL is ``store``'s.

Order, against the agent's other writers: a running consolidation is waited for and a new
one skips the agent, episode starts and ends wait; the erased turns' extraction queue rows
are deleted *before* the facts lock is taken — a drain that already settled them holds
their row locks and waits for that lock to learn, so it finishes first and its facts are
erased with the rest; a drain that settles later finds its rows gone and learns nothing.
After commit the agent's prefetched recalls are dropped.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Iterable

from sqlalchemy.ext.asyncio import AsyncConnection

from memory_kernel.erasure import policy, store
from memory_kernel.heart.facts import store as facts_store
from memory_kernel.models.erasure import ErasureReport
from memory_kernel.storage.database import Database
from memory_kernel.validation import check_agent_id

__all__ = ["ErasureService"]

_QUEUE = ("extraction_queue",)
_REST = tuple(t for t in store.AGENT_TABLES if t not in _QUEUE)


class ErasureService:
    """``kernel.forget``, ``kernel.forget_session``, ``kernel.erase_agent`` and ``memory-kernel
    erase``. ``erased(agent_id)`` runs after each commit (a kernel's context engine drops
    its prefetched recalls of the agent)."""

    def __init__(
        self, database: Database, *, erased: Callable[[str], Awaitable[None]] | None = None
    ) -> None:
        self._db = database
        self._erased = erased

    async def forget(self, agent_id: str, memory_ids: Iterable[uuid.UUID | str]) -> ErasureReport:
        """Erase these memories of the agent (facts, episodes, turns, decisions) and what
        derives from them (``policy``)."""
        agent = check_agent_id(agent_id)
        ids = policy.checked_ids(memory_ids)
        async with self._db.transaction() as conn:
            await store.lock_writers(conn, agent)
            named = policy.seeds(ids, await store.kinds_of(conn, agent, ids))
            report = await self._cascade(conn, agent, named)
        await self._after(agent)
        return report

    async def forget_session(self, agent_id: str, session_id: str) -> ErasureReport:
        """Erase one conversation of the agent: its turns, episodes and decisions, and the
        facts extracted from it or remembered in it (nothing there: an empty report)."""
        agent = check_agent_id(agent_id)
        session = check_agent_id(session_id, field="session_id")
        async with self._db.transaction() as conn:
            await store.lock_writers(conn, agent)
            report = await self._cascade(conn, agent, policy.Seeds(session=session))
        await self._after(agent)
        return report

    async def erase_agent(self, agent_id: str) -> ErasureReport:
        """Erase every row the agent has, and its own partitions."""
        agent = check_agent_id(agent_id)
        async with self._db.transaction() as conn:
            await store.lock_writers(conn, agent)
            counts = await store.delete_agent_rows(conn, agent, _QUEUE)
            await facts_store.lock_agents(conn, [agent])
            counts |= await store.delete_agent_rows(conn, agent, _REST)
            partitions = await store.drop_partitions(conn, agent)
        await self._after(agent)
        return ErasureReport(
            agent_id=agent, facts=counts["facts"], episodes=counts["episodes"],
            turns=counts["turns"], decisions=counts["decisions"], events=counts["memory_events"],
            bookkeeping=counts["turn_results"] + counts["extraction_queue"],
            partitions=partitions,
        )  # fmt: skip

    async def _after(self, agent: str) -> None:
        if self._erased is not None:
            await self._erased(agent)

    async def _cascade(
        self, conn: AsyncConnection, agent: str, named: policy.Seeds
    ) -> ErasureReport:
        erased = await store.delete_turns(conn, agent, named.turns, named.session)
        turns = erased.ids
        queued = await store.delete_queue(conn, agent, turns)
        await facts_store.lock_agents(conn, [agent])
        episodes = await store.delete_episodes(
            conn, agent, named.episodes, named.session, of_turns=erased.episodes
        )
        ongoing = await store.ongoing_firsts(conn, agent, erased.episodes - episodes)
        for episode, first in ongoing.items():
            await store.restart_episode(conn, agent, episode, policy.restarted_summary(first))
        facts = await store.delete_facts(
            conn, agent, named.facts, from_turns=turns,
            # Remembered in a session's episodes: theirs only when the whole session goes.
            from_episodes=episodes if named.session is not None else (),
        )  # fmt: skip
        decisions = await store.delete_decisions(
            conn, agent, named.decisions, named.session, of_turns=erased
        )
        gone = turns | episodes | facts | decisions
        await store.untie(conn, agent, gone - turns)
        events = await store.delete_events(conn, agent, gone)
        results = await store.delete_results(conn, agent, gone - turns)
        return ErasureReport(
            agent_id=agent, facts=len(facts), episodes=len(episodes), turns=len(turns),
            decisions=len(decisions), events=events, bookkeeping=queued + results,
        )  # fmt: skip
