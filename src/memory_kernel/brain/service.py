"""``kernel.brain``: decisions behind a three-layer gate.

- :meth:`Brain.record` — the explicit path (an agent's ``record_decision`` tool): no filter.
- :meth:`Brain.start` / :meth:`Brain.finalize` — deliberation, the automatic path:
  ``start`` applies layer 2 (dedup against the same session's active decisions of the last
  ``dedup_window_s``, under a per-session advisory lock so concurrent starts cannot both
  pass); ``finalize`` applies layer 3 (the quality gate) and, because the final text may
  differ from the started one, layer 2 again. A rejection is a soft delete
  (``active = false``, ``rejection_reason``) with a ``memory_events`` row. A decision that
  passes without a given confidence gets one from the gate's quality score
  (``gate.confidence_from_quality``: 0.6 to 0.8) instead of the 0.5 placeholder, which
  passive recall (> 0.5) would never inject.

Layer 1 (is the response a decision at all?) lives in ``memory_kernel.cognitive``, which
composes these operations into ``post_turn`` through the ``*_in`` variants.
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime

import numpy as np
import numpy.typing as npt
from sqlalchemy.ext.asyncio import AsyncConnection

from memory_kernel.brain import deliberation as dl
from memory_kernel.brain import repository as repo
from memory_kernel.brain.stats import GateCounters, Layer
from memory_kernel.errors import EmbedderError, InvalidVectorError, ValidationError
from memory_kernel.models.decisions import MAX_DECISION_BYTES, Decision, DecisionInput
from memory_kernel.models.enums import Stakes
from memory_kernel.runtime import Runtime
from memory_kernel.similarity import words
from memory_kernel.validation import check_agent_id, check_text, check_unit_interval

__all__ = ["Brain"]

_log = logging.getLogger(__name__)

Vector = npt.NDArray[np.float32]


def _stakes(value: Stakes | str) -> Stakes:
    try:
        return Stakes(value)
    except ValueError as exc:
        raise ValidationError(f"stakes must be one of {[s.value for s in Stakes]}") from exc


class Brain:
    """Decisions of every agent; each method is scoped by ``agent_id``."""

    def __init__(self, runtime: Runtime) -> None:
        self._rt = runtime
        #: What each layer of the decision gate rejected (read via ``kernel.stats()``).
        self.counters = GateCounters()

    async def embed_or_none(self, text: str) -> Vector | None:
        """The text's vector, or ``None`` when the embedder is unavailable: decisions are then
        stored without a vector and dedup falls back to keyword containment. A text without
        words gets no vector either: it says nothing to compare (the episodes' rule too)."""
        if not words(text):
            return None
        try:
            vector = (await self._rt.embed([text]))[0]
        except (EmbedderError, InvalidVectorError) as exc:
            _log.warning("decision stored without embedding", extra={"error": str(exc)})
            return None
        # A text without word tokens embeds to zero, which has no direction to compare.
        return vector if float(np.linalg.norm(vector)) > 0.0 else None

    async def embed_all_or_none(self, texts: list[str]) -> list[Vector | None]:
        """:meth:`embed_or_none` for several texts in one embedder call."""
        if not texts:
            return []
        try:
            vectors = await self._rt.embed(texts)
        except (EmbedderError, InvalidVectorError) as exc:
            _log.warning("decisions stored without embedding", extra={"error": str(exc)})
            return [None] * len(texts)
        return [v if float(np.linalg.norm(v)) > 0.0 else None for v in vectors]

    async def lock_session_in(
        self, conn: AsyncConnection, *, agent_id: str, session_id: str
    ) -> None:
        """Take the session's decision lock for the rest of the caller's transaction (the
        lock ``start``/``finalize`` take; re-entrant). Callers that also touch episodes take
        it first, so every transaction acquires the locks in the same order."""
        await repo.lock_session(conn, agent_id=agent_id, session_id=session_id)

    # --- the explicit path -------------------------------------------------------------

    async def record(self, decision: DecisionInput) -> Decision:
        """Store a decision the agent made explicitly; no filter, dedup or gate applies."""
        vector = await self.embed_or_none(decision.description)
        async with self._rt.db.transaction() as conn:
            stored = await self.record_in(conn, decision, embedding=vector)
        self.counters.recorded_explicit += 1
        return stored

    async def record_in(
        self, conn: AsyncConnection, decision: DecisionInput, *, embedding: Vector | None
    ) -> Decision:
        """:meth:`record` inside the caller's transaction (the caller counts after commit)."""
        return await dl.record_in(conn, self._rt, decision, embedding=embedding)

    # --- deliberation ------------------------------------------------------------------

    async def start(
        self,
        agent_id: str,
        session_id: str,
        description: str,
        *,
        episode_id: uuid.UUID | None = None,
        frame: str | None = None,
        stakes: Stakes | str = Stakes.MEDIUM,
        category: str | None = None,
    ) -> uuid.UUID | None:
        """Start deliberating; ``None`` when it duplicates a recent decision of the session."""
        check_agent_id(agent_id)
        check_agent_id(session_id, field="session_id")
        check_text(description, field="description", max_bytes=MAX_DECISION_BYTES)
        level = _stakes(stakes)
        vector = await self.embed_or_none(description)
        async with self._rt.db.transaction() as conn:
            result = await self.start_in(
                conn,
                agent_id=agent_id,
                session_id=session_id,
                description=description,
                embedding=vector,
                episode_id=episode_id,
                frame=frame,
                stakes=level,
                category=category,
            )
        self.observe_start(result, agent_id=agent_id, session_id=session_id)
        return result.decision_id

    async def start_in(
        self,
        conn: AsyncConnection,
        *,
        agent_id: str,
        session_id: str,
        description: str,
        embedding: Vector | None,
        episode_id: uuid.UUID | None = None,
        frame: str | None = None,
        stakes: Stakes = Stakes.MEDIUM,
        category: str | None = None,
        session_locked: bool = False,
    ) -> dl.StartResult:
        """:meth:`start` inside the caller's transaction; call :meth:`observe_start` after
        commit. ``embedding`` is the description's vector (``None``: embedder unavailable);
        ``session_locked``: the caller took :meth:`lock_session_in` already."""
        return await dl.start_in(
            conn,
            self._rt,
            agent_id=agent_id,
            session_id=session_id,
            description=description,
            embedding=embedding,
            episode_id=episode_id,
            frame=frame,
            stakes=stakes,
            category=category,
            session_locked=session_locked,
        )

    async def finalize(
        self,
        decision_id: uuid.UUID,
        *,
        agent_id: str,
        description: str | None = None,
        reasoning: str | None = None,
        confidence: float | None = None,
        stakes: Stakes | str | None = None,
        category: str | None = None,
    ) -> Decision | None:
        """Finish a deliberation through the quality gate; ``None`` when it was rejected
        (soft-deleted with its reason) or had been rejected before."""
        check_agent_id(agent_id)
        if description is not None:
            check_text(description, field="description", max_bytes=MAX_DECISION_BYTES)
        if confidence is not None:
            confidence = check_unit_interval(confidence, field="confidence")
        level = None if stakes is None else _stakes(stakes)
        vector = None if description is None else await self.embed_or_none(description)
        async with self._rt.db.transaction() as conn:
            current = await repo.get(conn, agent_id=agent_id, decision_id=decision_id)
            result = await self.finalize_in(
                conn,
                decision_id,
                agent_id=agent_id,
                description=description,
                embedding=vector,
                reasoning=reasoning,
                confidence=confidence,
                stakes=level,
                category=category,
            )
        self.observe_finalize(result, agent_id=agent_id, session_id=current.session_id)
        return result.decision

    async def finalize_in(
        self,
        conn: AsyncConnection,
        decision_id: uuid.UUID,
        *,
        agent_id: str,
        description: str | None = None,
        embedding: Vector | None = None,
        reasoning: str | None = None,
        confidence: float | None = None,
        stakes: Stakes | None = None,
        category: str | None = None,
        session_locked: bool = False,
    ) -> dl.FinalizeResult:
        """:meth:`finalize` inside the caller's transaction; call :meth:`observe_finalize`
        after commit."""
        return await dl.finalize_in(
            conn,
            self._rt,
            decision_id,
            agent_id=agent_id,
            description=description,
            embedding=embedding,
            reasoning=reasoning,
            confidence=confidence,
            stakes=stakes,
            category=category,
            session_locked=session_locked,
        )

    async def abandon_in(
        self,
        conn: AsyncConnection,
        decision_id: uuid.UUID,
        *,
        agent_id: str,
        layer: Layer,
        reason: str,
    ) -> dl.FinalizeResult:
        """Soft-delete a deliberation that turned out not to be a decision."""
        return await dl.abandon_in(
            conn, self._rt, decision_id, agent_id=agent_id, layer=layer, reason=reason
        )

    # --- counting (after commit) -------------------------------------------------------

    def observe_start(self, result: dl.StartResult, *, agent_id: str, session_id: str) -> None:
        if result.decision_id is not None:
            self.counters.started += 1
            return
        self.counters.reject(
            Layer.DUPLICATE,
            str(result.dedup.method),
            agent_id=agent_id,
            session_id=session_id,
            related_id=result.dedup.duplicate_of,
        )

    def observe_finalize(
        self,
        result: dl.FinalizeResult,
        *,
        agent_id: str,
        session_id: str,
        decision_id: uuid.UUID | None = None,
    ) -> None:
        if result.decision is not None:
            self.counters.recorded += int(result.decision.finalized)
        elif result.layer is not None:
            self.counters.reject(
                result.layer,
                result.reason or "unknown",
                agent_id=agent_id,
                session_id=session_id,
                decision_id=decision_id,
                related_id=result.related_id,
            )

    # --- reads -------------------------------------------------------------------------

    async def get(self, decision_id: uuid.UUID, *, agent_id: str) -> Decision:
        """One decision of ``agent_id`` (active or not); ``NotFoundError`` if there is none."""
        check_agent_id(agent_id)
        async with self._rt.db.connection() as conn:
            return await repo.get(conn, agent_id=agent_id, decision_id=decision_id)

    async def get_recent_decisions(
        self,
        agent_id: str,
        since: datetime,
        limit: int = 5,
        session_id: str | None = None,
    ) -> list[Decision]:
        """Active decisions of ``agent_id`` created after ``since``, newest first."""
        check_agent_id(agent_id)
        if session_id is not None:
            check_agent_id(session_id, field="session_id")
        if not isinstance(since, datetime) or since.tzinfo is None:
            raise ValidationError("since must be a timezone-aware datetime")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1000:
            raise ValidationError("limit must be an integer between 1 and 1000")
        async with self._rt.db.connection() as conn:
            return await repo.recent(
                conn, agent_id=agent_id, since=since, limit=limit, session_id=session_id
            )
