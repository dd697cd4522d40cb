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

from memory_kernel.consolidation import repository as consolidation_store
from memory_kernel.erasure import policy, store
from memory_kernel.heart.facts import store as facts_store
from memory_kernel.models.erasure import ErasureReport
from memory_kernel.storage import locks
from memory_kernel.storage.database import Database
from memory_kernel.validation import check_agent_id
from memory_kernel.vectors import Vector

__all__ = ["ErasureService"]

_QUEUE = ("extraction_queue",)
_REST = tuple(t for t in store.AGENT_TABLES if t not in _QUEUE)


#: Embeds texts, ``None`` where there is no vector (``Runtime.embed_or_none``).
Embed = Callable[[list[str]], Awaitable[list[Vector | None]]]
#: The host's summariser's summary of an episode as its turns are now, or ``None``
#: (``EpisodeService.written_summary``).
Rewrite = Callable[[str, uuid.UUID], Awaitable[str | None]]
#: An episode's summary made again, and whether the episode had ended.
Remade = dict[uuid.UUID, tuple[str, bool]]


class ErasureService:
    """``kernel.forget``, ``kernel.forget_session``, ``kernel.erase_agent`` and ``memory-kernel
    erase``. After each commit, ``embed`` gives the episodes whose summary was made again
    their vector (an embedder that is down leaves them to the next ``consolidate``), an
    ended one first its summary written by the host's summariser through ``rewrite`` (as
    its end wrote it; the extractive one stays if there is none or it fails), and
    ``erased(agent_id)`` runs (a kernel's context engine drops its prefetched recalls of
    the agent). ``summary_chars``: ``HeartConfig.episode_summary_chars``."""

    def __init__(
        self,
        database: Database,
        *,
        summary_chars: int,
        embed: Embed,
        erased: Callable[[str], Awaitable[None]] | None = None,
        rewrite: Rewrite | None = None,
    ) -> None:
        self._db = database
        self._summary_chars = summary_chars
        self._embed = embed
        self._erased = erased
        self._rewrite = rewrite

    async def forget(self, agent_id: str, memory_ids: Iterable[uuid.UUID | str]) -> ErasureReport:
        """Erase these memories of the agent (facts, episodes, turns, decisions) and what
        derives from them (``policy``)."""
        agent = check_agent_id(agent_id)
        ids = policy.checked_ids(memory_ids)
        async with self._db.transaction() as conn:
            await locks.lock_agent_writers(conn, agent)
            named = policy.seeds(ids, await store.kinds_of(conn, agent, ids))
            report, remade = await self._cascade(conn, agent, named)
        await self._revector(agent, remade)
        await self._after(agent)
        return report

    async def forget_session(self, agent_id: str, session_id: str) -> ErasureReport:
        """Erase one conversation of the agent: its turns, episodes and decisions, and the
        facts extracted from it or remembered in it (nothing there: an empty report)."""
        agent = check_agent_id(agent_id)
        session = check_agent_id(session_id, field="session_id")
        async with self._db.transaction() as conn:
            await locks.lock_agent_writers(conn, agent)
            report, remade = await self._cascade(conn, agent, policy.Seeds(session=session))
        await self._revector(agent, remade)
        await self._after(agent)
        return report

    async def erase_agent(self, agent_id: str) -> ErasureReport:
        """Erase every row the agent has, and its own partitions."""
        agent = check_agent_id(agent_id)
        async with self._db.transaction() as conn:
            await locks.lock_agent_writers(conn, agent)
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

    async def _revector(self, agent: str, remade: Remade) -> None:
        """The vectors of the summaries made again, in a transaction of their own (neither
        the summariser nor the embedder is called while the erasure holds its locks)."""
        if not remade:
            return
        summaries = {
            episode: await self._rewritten(agent, episode, summary) if ended else summary
            for episode, (summary, ended) in remade.items()
        }
        found = await self._embed(list(summaries.values()))
        async with self._db.transaction() as conn:
            for (episode, summary), vector in zip(summaries.items(), found, strict=True):
                if vector is not None:
                    await consolidation_store.fill_vector(
                        conn, "episodes", agent, episode, summary, vector
                    )

    async def _rewritten(self, agent: str, episode: uuid.UUID, summary: str) -> str:
        """The ended episode's summary by the host's summariser, in place of ``summary``
        unless the episode changed meanwhile; ``summary`` without a summariser."""
        written = None if self._rewrite is None else await self._rewrite(agent, episode)
        if written is None or written == summary:
            return summary
        async with self._db.transaction() as conn:
            done = await store.rewrite_summary(conn, agent, episode, summary, written)
        return written if done else summary

    async def _cascade(
        self, conn: AsyncConnection, agent: str, named: policy.Seeds
    ) -> tuple[ErasureReport, Remade]:
        """Erase what ``named`` names and what derives from it; returns the report and the
        episodes whose summary was made again (their new summaries)."""
        erased = await store.delete_turns(conn, agent, named.turns, named.session)
        turns = erased.ids
        queued = await store.delete_queue(conn, agent, turns)
        await facts_store.lock_agents(conn, [agent])
        episodes = await store.delete_episodes(conn, agent, named.episodes, named.session)
        remade, emptied = await self._remake(conn, agent, erased.episodes - episodes)
        episodes |= await store.delete_episodes(conn, agent, emptied, None)
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
        report = ErasureReport(
            agent_id=agent, facts=len(facts), episodes=len(episodes), turns=len(turns),
            decisions=len(decisions), events=events, bookkeeping=queued + results,
            remade=len(remade),
        )  # fmt: skip
        return report, remade

    async def _remake(
        self, conn: AsyncConnection, agent: str, ids: set[uuid.UUID]
    ) -> tuple[Remade, set[uuid.UUID]]:
        """The episodes ``ids`` lost turns: each gets a summary made again from the turns it
        still has; returns those new summaries, and the ended episodes left with no turn."""
        remade: Remade = {}
        emptied: set[uuid.UUID] = set()
        for kept in await store.kept_episodes(conn, agent, ids):
            summary = policy.remade_summary(
                kept.turns, ongoing=kept.ongoing, max_chars=self._summary_chars
            )
            if summary is None:
                emptied.add(kept.id)
                continue
            await store.remake_summary(conn, agent, kept.id, summary)
            remade[kept.id] = (summary, not kept.ongoing)
        return remade, emptied
