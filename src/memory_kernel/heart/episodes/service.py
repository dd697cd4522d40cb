"""``kernel.heart.episodes``: start with dedup, end with admission control, search.

Start: starts of one agent are serialised (advisory lock) and an ongoing episode of the
agent started within the window that says the same thing is returned instead of a new one.
The lock is taken by the window read, and the write (episode + audit row) is one
statement: a start is two statements in one transaction.

End: the episode is completed and admission control decides whether it enters long-term
memory (ADD / NOT / REPLACE / MERGE); see ``ending.py``. The pure stages live in
``admission.py``, the SQL in ``repository.py`` (reads) and ``writes.py`` (writes).

The embedder failing never loses an episode: it is stored without a vector, start dedup
falls back to word overlap, and admission ADDs it ("no embedding").
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncConnection

from memory_kernel.errors import NotFoundError, ValidationError
from memory_kernel.heart.episodes import repository as repo
from memory_kernel.heart.episodes.dedup import OngoingEpisode, find_duplicate
from memory_kernel.heart.episodes.ending import Admission
from memory_kernel.heart.episodes.rows import (
    check_id,
    check_input,
    new_row,
    reuse_event,
    started_event,
)
from memory_kernel.heart.episodes.vectors import embed_or_none
from memory_kernel.heart.episodes.writes import Seen, create_in, reuse_in
from memory_kernel.judges.base import Judge
from memory_kernel.judges.rules import RuleJudge
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
from memory_kernel.storage import locks
from memory_kernel.validation import check_agent_id, check_text

__all__ = ["EpisodeService"]

_MAX_K = 1000


class EpisodeService:
    """Episodes of every agent; see the module docstring."""

    def __init__(self, runtime: Runtime) -> None:
        self._rt = runtime
        self._cfg = runtime.config.heart
        # A RuleJudge passed as "the judge" is the default behaviour, not an LLM verdict.
        judge = runtime.judge
        self._judge: Judge | None = None if isinstance(judge, RuleJudge) else judge
        self._admission = Admission(runtime, self._judge)

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
            await locks.lock(conn, "mk-episode-start", episode.agent_id)
            return await self._start(conn, episode, embedding, locked=True)

    async def _start(
        self,
        conn: AsyncConnection,
        episode: EpisodeInput,
        vector: Vector | None,
        *,
        locked: bool = False,
    ) -> EpisodeStart:
        """``locked``: the transaction opened with the agent's start lock (``start``), so
        every read sees what earlier starts committed and the insert needs no guard."""
        now = self._rt.clock.now()
        agent = episode.agent_id
        since = now - timedelta(seconds=self._cfg.episode_dedup_window_s)
        # Starts of one agent are serialised (advisory lock) so concurrent identical starts
        # see each other. In a caller's transaction the window read takes the lock itself,
        # saving a round trip; its snapshot may predate the grant, so the insert re-checks
        # the window (``seen``).
        recent = await self._window(conn, agent, since, vector, lock=not locked)
        seen = None
        if not locked:
            if len(recent) < self._cfg.episode_dedup_scan:
                seen = Seen(agent_id=agent, since=since, ids=[r.id for r in recent])
            else:  # a full page: unseen rows and rows past the limit look alike, read again
                recent = await self._window(conn, agent, since, vector)
        started = await self._reuse_or_create(conn, episode, vector, now, recent, seen)
        if started is None:
            # Another start committed in the window while this one waited for the lock:
            # read again, now with a snapshot taken after the grant.
            recent = await self._window(conn, agent, since, vector)
            started = await self._reuse_or_create(conn, episode, vector, now, recent, None)
        if started is None:
            raise AssertionError("unreachable: an insert without a guard always writes")
        return started

    async def _window(
        self,
        conn: AsyncConnection,
        agent: str,
        since: datetime,
        vector: Vector | None,
        *,
        lock: bool = False,
    ) -> list[OngoingEpisode]:
        return await repo.recent_ongoing(
            conn,
            agent_id=agent,
            since=since,
            vector=vector,
            limit=self._cfg.episode_dedup_scan,
            lock="start" if lock else None,
        )

    async def _reuse_or_create(
        self,
        conn: AsyncConnection,
        episode: EpisodeInput,
        vector: Vector | None,
        now: datetime,
        recent: list[OngoingEpisode],
        seen: Seen | None,
    ) -> EpisodeStart | None:
        """Reuse the best duplicate in ``recent``, else create; ``None`` when the guarded
        insert found an episode in the window that ``recent`` does not have."""
        agent = episode.agent_id
        while (
            match := find_duplicate(
                episode.summary,
                recent,
                overlap_threshold=self._cfg.episode_dedup_overlap,
                similarity_threshold=self._cfg.episode_dedup_similarity,
            )
        ) is not None:
            event = reuse_event(agent, match, episode.session_id, now)
            found = await reuse_in(conn, agent_id=agent, episode_id=match.id, now=now, event=event)
            if found is not None:
                return EpisodeStart(episode=found, deduplicated=True, reason=match.reason)
            # Ended since it was read (ends do not take the start lock): try the others.
            recent = [r for r in recent if r.id != match.id]
        row = new_row(episode, vector, now)
        created = await create_in(conn, row, started_event(row, now), seen=seen)
        return None if created is None else EpisodeStart(episode=created, deduplicated=False)

    # -- turns and use -------------------------------------------------------------------

    async def record_turn(self, *, agent_id: str, episode_id: uuid.UUID) -> None:
        """Count a turn of the episode (``metadata["turns"]``); joins a caller's open unit."""
        check_agent_id(agent_id)
        check_id(episode_id)
        now = self._rt.clock.now()
        async with self._rt.db.transaction() as conn:
            found = await repo.increment_turns(
                conn, agent_id=agent_id, episode_id=episode_id, now=now
            )
        if not found:
            raise NotFoundError(f"episode {episode_id} does not exist for agent {agent_id!r}")

    async def record_use(self, *, agent_id: str, episode_ids: Sequence[uuid.UUID]) -> int:
        """Count one use (e.g. the episode was put in a prompt) of each episode; returns how
        many exist. MERGE sums these counters into the canonical episode."""
        check_agent_id(agent_id)
        for episode_id in episode_ids:
            check_id(episode_id)
        if not episode_ids:
            return 0
        async with self._rt.db.transaction() as conn:
            return await repo.add_usage(
                conn, agent_id=agent_id, episode_ids=episode_ids, now=self._rt.clock.now()
            )

    async def get(self, episode_id: uuid.UUID, *, agent_id: str) -> Episode:
        check_agent_id(agent_id)
        check_id(episode_id)
        async with self._rt.db.connection() as conn:
            found = await repo.get(conn, agent_id=agent_id, episode_id=episode_id)
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
        vector = await embed_or_none(self._rt, query)
        async with self._rt.db.connection() as conn:
            if vector is None:
                found = await repo.search_text(conn, agent_id=agent_id, query=query, k=k)
                return [
                    EpisodeHit(episode=e, similarity=text_overlap(query, e.summary)) for e in found
                ]
            near = await repo.search_vector(conn, agent_id=agent_id, vector=vector, k=k)
        return [EpisodeHit(episode=e, similarity=sim) for e, sim in near]
