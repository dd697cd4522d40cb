"""``kernel.heart.turns``: the conversation, kept verbatim with its time.

``post_turn`` records each exchange (the user's message and the assistant's reply) in its
own unit of work, so a turn is stored with the decision and the episode update or not at
all (invariant 4). The texts are embedded before the unit opens (``vectors``); recall
searches them like the memories (``context.retrieval``, hybrid full text + vector).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime

from memory_kernel.heart.turns import store
from memory_kernel.heart.turns.policy import Said, embed_text, exchange, rows
from memory_kernel.runtime import Runtime, Vector
from memory_kernel.validation import check_agent_id

__all__ = ["TurnService"]


class TurnService:
    """The turns of every agent; see the module docstring."""

    def __init__(self, runtime: Runtime) -> None:
        self._rt = runtime

    @staticmethod
    def exchange(
        message: str, reply: str, *, asked_at: datetime, replied_at: datetime
    ) -> list[Said]:
        """The texts of an exchange that will be stored (embed ``embed_texts`` of them)."""
        return exchange(message, reply, asked_at=asked_at, replied_at=replied_at)

    @staticmethod
    def embed_texts(said: Sequence[Said]) -> list[str]:
        return [embed_text(s) for s in said]

    async def record(
        self,
        said: Sequence[Said],
        vectors: Sequence[Vector | None],
        *,
        agent_id: str,
        session_id: str,
        episode_id: uuid.UUID | None,
        decision_id: uuid.UUID | None = None,
        queue_at: datetime | None = None,
    ) -> None:
        """Store an exchange's texts; joins a caller's open unit of work. With ``queue_at``
        (``ExtractionService.queue_time``) they are queued for fact extraction too, in the
        same statement. ``decision_id``: the exchange's deliberation, named by both turns."""
        check_agent_id(agent_id)
        if not said:
            return
        new = rows(
            list(said), list(vectors), agent_id=agent_id, session_id=session_id,
            episode_id=episode_id, decision_id=decision_id,
        )  # fmt: skip
        async with self._rt.db.transaction() as conn:
            await store.insert(conn, new, queue_at=queue_at)
        # A promoted agent's new rows wait, staged, for the index worker.
        self._rt.db.staged.note("turns", [agent_id])

    async def of_episode(self, *, agent_id: str, episode_id: uuid.UUID) -> list[store.StoredTurn]:
        """The episode's turns, in the order they were said."""
        async with self._rt.db.connection() as conn:
            return await store.by_episode(conn, agent_id=agent_id, episode_id=episode_id)
