"""Ending a session's episodes: when the host says the session ended (``end_session``), or
when they sat idle for ``HeartConfig.episode_idle_end_s`` (``end_idle``: ``consolidate``,
``kernel.end_idle_episodes``).

Each ongoing episode is ended on its own: its turns are read, its summary is built from
them (``summary.summarise_turns``: key sentences, newer statements replacing older ones about
the same thing; or by the host's ``EpisodeSummariser``, e.g. ``ChatSummariser``, with the
extractive summary as the fallback when it fails, times out or answers nothing usable),
and ``EpisodeService.end`` completes it through admission control (ADD / NOT / REPLACE /
MERGE) — the summary is embedded before that transaction opens. An episode
in which no turn was completed (a ``pre_turn`` whose ``post_turn`` never came) has nothing to
remember: it is abandoned (``status = abandoned``, never admitted), with its audit row; so is
one none of whose turns is stored (each was wordless, or was erased). An episode someone else
ended meanwhile is skipped.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta

from memory_kernel.errors import ValidationError
from memory_kernel.heart.episodes import store
from memory_kernel.heart.episodes.policy import IDLE, SESSION_ENDED
from memory_kernel.heart.episodes.summary import SummaryTurn, summarise_turns
from memory_kernel.heart.turns import store as turns_store
from memory_kernel.heart.turns.store import StoredTurn
from memory_kernel.models.enums import DecidedBy, EventKind, MemoryKind
from memory_kernel.models.episodes import MAX_TEXT_BYTES, Episode, EpisodeEnd
from memory_kernel.models.extraction import ExtractionTurn
from memory_kernel.runtime import Runtime
from memory_kernel.similarity import collapsed_head
from memory_kernel.storage.events import Event
from memory_kernel.validation import check_agent_id, check_text

__all__ = ["IDLE", "NO_TURN", "NO_TURN_KEPT", "SESSION_ENDED", "SessionEnds"]

_log = logging.getLogger(__name__)

#: Why an episode is abandoned (its audit row's reason): no turn of it was completed, or
#: none of its turns is stored (each was wordless, or was erased).
NO_TURN = "no turn was completed"
NO_TURN_KEPT = "no turn of it is stored"

End = Callable[..., Awaitable[EpisodeEnd]]


class SessionEnds:
    """``end_session`` and ``end_idle`` of ``EpisodeService`` (which passes its ``end``)."""

    def __init__(self, runtime: Runtime, end: End) -> None:
        self._rt = runtime
        self._cfg = runtime.config.heart
        self._end = end

    async def end_session(self, agent_id: str, session_id: str) -> list[EpisodeEnd]:
        """End the session's ongoing episodes (normally one)."""
        check_agent_id(agent_id)
        check_agent_id(session_id, field="session_id")
        async with self._rt.db.connection() as conn:
            found = await store.ongoing(conn, agent_id=agent_id, session_id=session_id)
        return await self._end_all(found, SESSION_ENDED)

    async def end_idle(self, agent_id: str, *, limit: int = 1000) -> list[EpisodeEnd]:
        """End the agent's episodes that saw no turn for ``episode_idle_end_s``."""
        check_agent_id(agent_id)
        idle = timedelta(seconds=self._cfg.episode_idle_end_s)
        before = self._rt.clock.now() - idle
        async with self._rt.db.connection() as conn:
            found = await store.ongoing(conn, agent_id=agent_id, idle_before=before, limit=limit)
        return await self._end_all(found, IDLE)

    async def idle_agents(self, *, limit: int = 100) -> list[str]:
        """Agents with episodes ``end_idle`` would end now."""
        before = self._rt.clock.now() - timedelta(seconds=self._cfg.episode_idle_end_s)
        async with self._rt.db.connection() as conn:
            return await store.idle_agents(conn, idle_before=before, limit=limit)

    async def idle(self, agent_id: str) -> int:
        """How many of the agent's episodes are idle (what ``end_idle`` would end)."""
        before = self._rt.clock.now() - timedelta(seconds=self._cfg.episode_idle_end_s)
        async with self._rt.db.connection() as conn:
            return len(await store.ongoing(conn, agent_id=agent_id, idle_before=before))

    async def _end_all(self, found: list[Episode], outcome: str) -> list[EpisodeEnd]:
        ended = []
        for episode in found:
            done = await self._end_one(episode, outcome)
            if done is not None:
                ended.append(done)
        return ended

    async def _end_one(self, episode: Episode, outcome: str) -> EpisodeEnd | None:
        agent = episode.agent_id
        if not episode.metadata.get("turns"):  # post_turn never counted a turn
            await self._abandon(agent, episode.id, NO_TURN)
            return None
        async with self._rt.db.connection() as conn:
            said = await turns_store.by_episode(conn, agent_id=agent, episode_id=episode.id)
        if not said:  # every turn was wordless, or erased
            await self._abandon(agent, episode.id, NO_TURN_KEPT)
            return None
        summary = await self._summary(episode, said)
        try:
            return await self._end(episode.id, agent_id=agent, outcome=outcome, summary=summary)
        except ValidationError:  # ended meanwhile (another worker, the host)
            _log.debug("episode %s ended meanwhile", episode.id)
            return None

    async def written_summary(self, agent_id: str, episode_id: uuid.UUID) -> str | None:
        """The host's summariser's summary of the episode from the turns it has now (an
        erasure asks for it once an erased turn's summary was made again); ``None`` without
        a summariser, a turn or an episode, or when the summariser fails."""
        if self._rt.summariser is None:
            return None
        async with self._rt.db.connection() as conn:
            found = await store.get(conn, agent_id=agent_id, episode_id=episode_id)
            said = await turns_store.by_episode(conn, agent_id=agent_id, episode_id=episode_id)
        return None if found is None or not said else await self._written(found[0], said)

    async def _summary(self, episode: Episode, said: Sequence[StoredTurn]) -> str:
        """The host's summariser's summary, cut to ``episode_summary_chars``; the extractive
        one when there is no summariser or it fails (the episode must end either way)."""
        written = await self._written(episode, said)
        if written is not None:
            return written
        return summarise_turns(
            [SummaryTurn(t.role, t.content, t.created_at) for t in said],
            max_chars=self._cfg.episode_summary_chars,
            fallback=episode.summary,
        )

    async def _written(self, episode: Episode, said: Sequence[StoredTurn]) -> str | None:
        """The host's summariser's summary, cut to ``episode_summary_chars``; ``None``
        without one, or when it fails or times out."""
        summariser = self._rt.summariser
        if summariser is None:
            return None
        limit = self._cfg.episode_summary_chars
        turns = [_as_turn(episode, t) for t in said]
        timeout = self._cfg.episode_summariser_timeout_s
        try:
            async with asyncio.timeout(timeout):
                written = await summariser.summarise(turns, max_chars=limit)
            return _cut(check_text(written, field="summary", max_bytes=MAX_TEXT_BYTES), limit)
        except TimeoutError:
            _log.warning("summariser %r timed out after %ss", summariser.name, timeout)
        except Exception as exc:  # an untrusted plug-in: any failure means "extractive"
            _log.warning("summariser %r failed: %s", summariser.name, exc)
        return None

    async def _abandon(self, agent_id: str, episode_id: uuid.UUID, reason: str) -> None:
        now = self._rt.clock.now()
        event = Event(
            agent_id=agent_id,
            kind=MemoryKind.EPISODE,
            memory_id=episode_id,
            event=EventKind.EPISODE_ENDED,
            decided_by=DecidedBy.RULE,
            at=now,
            reason=reason,
        )
        async with self._rt.db.transaction() as conn:
            await store.abandon(
                conn, agent_id=agent_id, episode_id=episode_id, now=now, event=event
            )


def _as_turn(episode: Episode, turn: StoredTurn) -> ExtractionTurn:
    return ExtractionTurn(
        agent_id=episode.agent_id,
        session_id=episode.session_id,
        turn_id=turn.id,
        episode_id=episode.id,
        role="user" if turn.role == "user" else "assistant",
        text=turn.content,
        said_at=turn.created_at,
    )


def _cut(text: str, limit: int) -> str:
    """``text`` at most ``limit`` characters: cut at a word boundary, marked with "…"."""
    text = collapsed_head(text, limit)
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    if " " in head:
        head = head[: head.rindex(" ")]
    return head.rstrip(" ,;:") + "…"
