"""``kernel.heart.episodes``: start with dedup, end with admission control, search.

Start: one transaction (joining a caller's open unit of work): the agent's start lock
first, so starts of one agent are serialised and each sees what the previous one
committed. An episode is a session's, not a message's: the session's ongoing episode, if it
saw a turn within ``episode_idle_end_s``, goes on. Otherwise the dedup window is read, and
an ongoing episode of the agent started within the window that says the same thing is
returned instead of a new one (the seed's "show me status" twice).

End: the episode is completed and admission control decides whether it enters long-term
memory (ADD / NOT / REPLACE / MERGE); see ``ending.py``. ``end_session`` and ``end_idle``
end a session's (an idle agent's) episodes with a summary built from their turns
(``summary.py``); see ``sessions.py``. The rules live in ``policy.py``,
the SQL in ``store.py`` and ``admission_store.py``.

The embedder failing never loses an episode: it is stored without a vector, start dedup
falls back to word overlap, and admission ADDs it ("no embedding"). Nothing is embedded
while a transaction of this service is open.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from memory_kernel.errors import NotFoundError, ValidationError
from memory_kernel.heart.episodes import store
from memory_kernel.heart.episodes.ending import Admission
from memory_kernel.heart.episodes.policy import (
    DuplicateMatch,
    check_id,
    check_input,
    find_duplicate,
    new_row,
)
from memory_kernel.heart.episodes.sessions import SessionEnds
from memory_kernel.judges.base import Judge
from memory_kernel.judges.rules import RuleJudge
from memory_kernel.models.enums import DecidedBy, EventKind, MemoryKind
from memory_kernel.models.episodes import (
    Episode,
    EpisodeEnd,
    EpisodeEndInput,
    EpisodeHit,
    EpisodeInput,
    EpisodeStart,
)
from memory_kernel.runtime import MISSING, Missing, Runtime, Vector
from memory_kernel.similarity import text_overlap
from memory_kernel.storage.events import Event
from memory_kernel.validation import check_agent_id, check_text

__all__ = ["SESSION_GOES_ON", "EpisodeService"]

_MAX_K = 1000
#: ``EpisodeStart.reason`` when the session's ongoing episode goes on.
SESSION_GOES_ON = "the session's ongoing episode"


class EpisodeService:
    """Episodes of every agent; see the module docstring."""

    def __init__(self, runtime: Runtime) -> None:
        self._rt = runtime
        self._cfg = runtime.config.heart
        # A RuleJudge passed as "the judge" is the default behaviour, not an LLM verdict.
        judge = runtime.judge
        self._judge: Judge | None = None if isinstance(judge, RuleJudge) else judge
        self._admission = Admission(runtime, self._judge)
        self._sessions = SessionEnds(runtime, self.end)

    # -- start ---------------------------------------------------------------------------

    async def start(
        self, episode: EpisodeInput, *, embedding: Vector | Missing | None = MISSING
    ) -> EpisodeStart:
        """Start an episode, or return the agent's recent ongoing one that is the same.

        Runs in ``self._rt.db.transaction()``, so inside a caller's unit of work it joins
        it. A caller that already embedded the summary passes ``embedding`` (``None`` = there
        is none); ``MISSING`` embeds it here, before the transaction opens."""
        check_input(episode)
        if isinstance(embedding, Missing):
            embedding = (await self._rt.embed_or_none([episode.summary]))[0]
        async with self._rt.db.transaction() as conn:
            await store.lock_starts(conn, episode.agent_id)
            return await self._reuse_or_create(conn, episode, embedding)

    async def _reuse_or_create(
        self, conn: AsyncConnection, episode: EpisodeInput, vector: Vector | None
    ) -> EpisodeStart:
        """Under the agent's start lock: go on with the session's ongoing episode, else
        reuse the best duplicate in the window, else create."""
        agent, now = episode.agent_id, self._rt.clock.now()
        current, recent = await store.session_or_recent(
            conn,
            agent_id=agent,
            session_id=episode.session_id,
            since=now - timedelta(seconds=self._cfg.episode_idle_end_s),
            now=now,
            window=now - timedelta(seconds=self._cfg.episode_dedup_window_s),
            vector=vector,
            limit=self._cfg.episode_dedup_scan,
        )
        if current is not None:
            return EpisodeStart(episode=current, deduplicated=True, reason=SESSION_GOES_ON)
        while (
            match := find_duplicate(
                episode.summary,
                recent,
                overlap_threshold=self._cfg.episode_dedup_overlap,
                similarity_threshold=self._cfg.episode_dedup_similarity,
            )
        ) is not None:
            event = _reuse_event(agent, match, episode.session_id, now)
            found = await store.reuse(
                conn, agent_id=agent, episode_id=match.id, now=now, event=event
            )
            if found is not None:
                return EpisodeStart(episode=found, deduplicated=True, reason=match.reason)
            # Ended since it was read (ends do not take the start lock): try the others.
            recent = [r for r in recent if r.id != match.id]
        row = new_row(episode, vector, now)
        created = await store.create(conn, row, _started_event(row, now))
        return EpisodeStart(episode=created, deduplicated=False)

    # -- turns and use -------------------------------------------------------------------

    async def record_turn(self, *, agent_id: str, episode_id: uuid.UUID) -> None:
        """Count a turn of the episode (``metadata["turns"]``); joins a caller's open unit."""
        check_agent_id(agent_id)
        check_id(episode_id)
        now = self._rt.clock.now()
        async with self._rt.db.transaction() as conn:
            found = await store.increment_turns(
                conn, agent_id=agent_id, episode_id=episode_id, now=now
            )
        if not found:
            raise NotFoundError(f"episode {episode_id} does not exist for agent {agent_id!r}")

    async def record_use(self, *, agent_id: str, episode_ids: Sequence[uuid.UUID]) -> int:
        """Count one use (e.g. the episode was put in a prompt) of each episode; returns how
        many exist. MERGE sums these counters into the canonical episode."""
        check_agent_id(agent_id)
        if isinstance(episode_ids, str | bytes) or not isinstance(episode_ids, Sequence):
            raise ValidationError("episode_ids must be a sequence of UUIDs")
        for episode_id in episode_ids:
            check_id(episode_id)
        if not episode_ids:
            return 0
        async with self._rt.db.transaction() as conn:
            return await store.add_usage(
                conn, agent_id=agent_id, episode_ids=episode_ids, now=self._rt.clock.now()
            )

    async def get(self, episode_id: uuid.UUID, *, agent_id: str) -> Episode:
        check_agent_id(agent_id)
        check_id(episode_id)
        async with self._rt.db.connection() as conn:
            found = await store.get(conn, agent_id=agent_id, episode_id=episode_id)
        if found is None:
            raise NotFoundError(f"episode {episode_id} does not exist for agent {agent_id!r}")
        return found[0]

    # -- end + admission -----------------------------------------------------------------

    async def end(
        self,
        episode_id: uuid.UUID,
        *,
        agent_id: str,
        outcome: str,
        summary: str | None = None,
        references: Sequence[str] = (),
        artifacts: Sequence[str] = (),
    ) -> EpisodeEnd:
        """Complete an ongoing episode and decide whether it enters long-term memory."""
        check_id(episode_id)
        args = EpisodeEndInput(
            agent_id=agent_id,
            outcome=outcome,
            summary=summary,
            references=references,
            artifacts=artifacts,
        )
        ended = await self._admission.end(episode_id, args)
        # An admitted episode of a promoted agent waits, staged, for the index worker.
        self._rt.db.staged.note("episodes", [agent_id])
        return ended

    async def written_summary(self, agent_id: str, episode_id: uuid.UUID) -> str | None:
        """The host's summariser's summary of the episode as its turns are now (``None``:
        no summariser, or it failed); see ``sessions.SessionEnds.written_summary``."""
        return await self._sessions.written_summary(agent_id, episode_id)

    async def end_session(self, agent_id: str, session_id: str) -> list[EpisodeEnd]:
        """End the session's ongoing episode: its summary is built from its turns, then
        admission decides (ADD / NOT / REPLACE / MERGE); see ``sessions.py``."""
        ended = await self._sessions.end_session(agent_id, session_id)
        self._rt.db.staged.note("episodes", [agent_id])
        return ended

    async def end_idle(self, agent_id: str) -> list[EpisodeEnd]:
        """End the agent's episodes idle for ``HeartConfig.episode_idle_end_s`` (like
        ``end_session``)."""
        ended = await self._sessions.end_idle(agent_id)
        self._rt.db.staged.note("episodes", [agent_id])
        return ended

    async def end_all_idle(self, *, agents: int = 100) -> list[EpisodeEnd]:
        """``end_idle`` for up to ``agents`` agents that have idle episodes (the sweeper's
        round)."""
        ended: list[EpisodeEnd] = []
        for agent_id in await self._sessions.idle_agents(limit=agents):
            ended += await self.end_idle(agent_id)
        return ended

    async def count_idle(self, agent_id: str) -> int:
        """How many of the agent's episodes ``end_idle`` would end now."""
        return await self._sessions.idle(agent_id)

    # -- search --------------------------------------------------------------------------

    async def search(self, agent_id: str, query: str, *, k: int = 5) -> list[EpisodeHit]:
        """The admitted episodes most similar to ``query`` (never NOT, superseded or ongoing).

        Falls back to full-text search when the embedder fails; the similarity of those
        hits is the word overlap with the query.
        """
        check_agent_id(agent_id)
        check_text(query, field="query", max_bytes=self._cfg.max_content_bytes)
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= _MAX_K:
            raise ValidationError(f"k must be an integer between 1 and {_MAX_K}")
        vector = (await self._rt.embed_or_none([query]))[0]
        async with self._rt.db.connection() as conn:
            if vector is None:
                found = await store.search_text(conn, agent_id=agent_id, query=query, k=k)
                return [
                    EpisodeHit(episode=e, similarity=text_overlap(query, e.summary)) for e in found
                ]
            near = await store.search_vector(conn, agent_id=agent_id, vector=vector, k=k)
        return [EpisodeHit(episode=e, similarity=sim) for e, sim in near]


def _started_event(row: Mapping[str, Any], now: datetime) -> Event:
    """The audit row of a new episode (``row`` as ``policy.new_row`` makes it)."""
    return Event(
        agent_id=row["agent_id"],
        kind=MemoryKind.EPISODE,
        memory_id=row["id"],
        event=EventKind.EPISODE_STARTED,
        decided_by=DecidedBy.CALLER,
        at=now,
    )


def _reuse_event(agent_id: str, match: DuplicateMatch, session_id: str, now: datetime) -> Event:
    return Event(
        agent_id=agent_id,
        kind=MemoryKind.EPISODE,
        memory_id=match.id,
        event=EventKind.EPISODE_REUSED,
        decided_by=DecidedBy.RULE,
        at=now,
        reason=match.reason,
        score=max(match.overlap, match.similarity or 0.0),
        details={"session_id": session_id, "overlap": match.overlap},
    )
