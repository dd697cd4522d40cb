"""``kernel.brain``: decisions behind a three-layer gate.

- :meth:`Brain.record` — the explicit path (an agent's ``record_decision`` tool): no filter.
- :meth:`Brain.start` / :meth:`Brain.finalize` — deliberation, the automatic path:
  ``start`` applies layer 2 (dedup against the same session's recent active decisions,
  under the session's decision lock so concurrent starts cannot both pass); ``finalize``
  applies layer 3 (the quality gate) and, because the final text may differ from the
  started one, layer 2 again. A rejection is a soft delete with its reason and an event.
- :meth:`Brain.record_outcome` — how a decision turned out (``brain.outcomes``).

The writes (:meth:`add`, :meth:`deliberate`, :meth:`conclude`, :meth:`abandon`) embed first,
then run in ``self._rt.db.transaction()`` (joining a caller's unit of work) and return the
full result uncounted: the public methods and ``memory_kernel.cognitive`` count after commit.
Locks are always taken in one order: the decision's row, the session's lock, episodes.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from memory_kernel.brain import policy, store
from memory_kernel.brain.dedup import RecentDecision
from memory_kernel.brain.gate import Classifier
from memory_kernel.brain.outcomes import record_outcome
from memory_kernel.brain.policy import Finalized, FinalizeResult, StartResult
from memory_kernel.brain.scorer import load_scorer
from memory_kernel.brain.stats import GateCounters, Layer
from memory_kernel.errors import ValidationError
from memory_kernel.models.decisions import (
    MAX_DECISION_BYTES,
    Decision,
    DecisionInput,
)
from memory_kernel.models.enums import DecidedBy, DecisionOutcome, EventKind, MemoryKind, Stakes
from memory_kernel.runtime import MISSING, Missing, Runtime, Vector
from memory_kernel.storage.events import Event, write_events
from memory_kernel.validation import check_agent_id, check_text, check_unit_interval

__all__ = ["Brain"]


class Brain:
    """Decisions of every agent; each method is scoped by ``agent_id``."""

    def __init__(self, runtime: Runtime) -> None:
        self._rt = runtime
        self._cfg = runtime.config.brain
        #: What each layer of the decision gate rejected (read via ``kernel.stats()``).
        self.counters = GateCounters()
        #: The decision classifier (layer 1, and layer 3's second opinion on a chat opening).
        scorer = load_scorer(self._cfg.decision_classifier)
        self.classifier = Classifier(scorer, self._cfg.decision_threshold)

    async def lock_session(self, *, agent_id: str, session_id: str) -> None:
        """Take the session's decision lock until the caller's unit of work ends (the lock
        the writes take; re-entrant). A unit that also touches episodes takes it first."""
        async with self._rt.db.transaction() as conn:
            await store.lock_session(conn, agent_id=agent_id, session_id=session_id)

    # --- the explicit path -------------------------------------------------------------

    async def record(self, decision: DecisionInput) -> Decision:
        """Store a decision the agent made explicitly; no filter, dedup or gate applies.
        Its ``episode_id``, if any, must be an episode of the same agent (``NotFoundError``)."""
        if not isinstance(decision, DecisionInput):
            raise ValidationError(f"expected a DecisionInput, got {type(decision).__name__}")
        vector = await self._vector(decision.description, MISSING)
        async with self._rt.db.transaction() as conn:
            if decision.episode_id is not None:
                await store.check_episode(
                    conn, agent_id=decision.agent_id, episode_id=decision.episode_id
                )
            stored = await self.add(decision, embedding=vector)
        self.counters.recorded_explicit += 1
        return stored

    async def add(
        self, decision: DecisionInput, *, embedding: Vector | Missing | None = MISSING
    ) -> Decision:
        """:meth:`record` without counting: stored finalized and active. ``embedding`` is
        the description's vector (``None``: there is none; ``MISSING``: embed it here)."""
        vector = await self._vector(decision.description, embedding)
        now = self._rt.clock.now()
        fields = {
            **decision.model_dump(),
            "stakes": decision.stakes.value,
            "active": True,
            "finalized": True,
        }
        async with self._rt.db.transaction() as conn:
            await store.lock_session(
                conn, agent_id=decision.agent_id, session_id=decision.session_id
            )
            row = await store.insert(conn, fields, embedding=vector, now=now)
            recorded = self._event(row, EventKind.DECISION_RECORDED, decided_by=DecidedBy.CALLER)
            await write_events(conn, [recorded])
        return row

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
        """Start deliberating; ``None`` when it duplicates a recent decision of the session.
        ``episode_id``, if given, must be an episode of ``agent_id`` (``NotFoundError``)."""
        check_agent_id(agent_id)
        check_agent_id(session_id, field="session_id")
        check_text(description, field="description", max_bytes=MAX_DECISION_BYTES)
        if episode_id is not None:
            policy.check_id(episode_id, "episode_id")
        frame = policy.optional_text(frame, "frame")
        category = policy.optional_text(category, "category")
        level = policy.stakes(stakes)
        vector = await self._vector(description, MISSING)
        async with self._rt.db.transaction() as conn:
            if episode_id is not None:  # the agent's own episode, checked in the same unit
                await store.check_episode(conn, agent_id=agent_id, episode_id=episode_id)
            result = await self.deliberate(
                agent_id, session_id, description,
                episode_id=episode_id, frame=frame, stakes=level, category=category,
                embedding=vector,
            )  # fmt: skip
        self.counters.observe_start(result, agent_id=agent_id, session_id=session_id)
        return result.decision_id

    async def deliberate(
        self,
        agent_id: str,
        session_id: str,
        description: str,
        *,
        episode_id: uuid.UUID | None = None,
        frame: str | None = None,
        stakes: Stakes = Stakes.MEDIUM,
        category: str | None = None,
        embedding: Vector | Missing | None = MISSING,
    ) -> StartResult:
        """:meth:`start` without validating or counting (call ``counters.observe_start`` once
        the unit committed): layer 2, then the draft with its placeholder confidence."""
        vector = await self._vector(description, embedding)
        async with self._rt.db.transaction() as conn:
            await store.lock_session(conn, agent_id=agent_id, session_id=session_id)
            recent = await self._recent(conn, agent_id, session_id)
            verdict = policy.duplicate(self._cfg, description, vector, recent)
            if verdict.duplicate:
                return StartResult(decision_id=None, dedup=verdict)
            fields = policy.draft_fields(
                agent_id, session_id, description,
                episode_id=episode_id, frame=frame, stakes=stakes, category=category,
            )  # fmt: skip
            row = await store.insert(conn, fields, embedding=vector, now=self._rt.clock.now())
            await write_events(conn, [self._event(row, EventKind.DECISION_STARTED)])
        return StartResult(decision_id=row.id, dedup=verdict)

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
        tool_errors: bool = False,
    ) -> Decision | None:
        """Finish a deliberation through the quality gate; ``None`` when it was rejected
        (soft-deleted with its reason) or had been rejected before. ``tool_errors``: the
        turn's tool calls errored, so a placeholder confidence is not held against it."""
        policy.check_id(decision_id, "decision_id")
        check_agent_id(agent_id)
        if description is not None:
            check_text(description, field="description", max_bytes=MAX_DECISION_BYTES)
        if confidence is not None:
            confidence = check_unit_interval(confidence, field="confidence")
        result = await self.conclude(
            decision_id,
            agent_id=agent_id,
            description=description,
            reasoning=policy.optional_text(reasoning, "reasoning"),
            confidence=confidence,
            stakes=None if stakes is None else policy.stakes(stakes),
            category=policy.optional_text(category, "category"),
            tool_errors=tool_errors,
        )
        self.counters.observe_finalize(result, agent_id=agent_id, decision_id=decision_id)
        return result.decision

    async def conclude(
        self,
        decision_id: uuid.UUID,
        *,
        agent_id: str,
        description: str | None = None,
        embedding: Vector | Missing | None = MISSING,
        reasoning: str | None = None,
        confidence: float | None = None,
        stakes: Stakes | None = None,
        category: str | None = None,
        tool_errors: bool = False,
        gate: dict[str, Any] | None = None,
    ) -> FinalizeResult:
        """:meth:`finalize` without validating or counting (call ``counters.observe_finalize``
        once the unit committed): layer 3, then layer 2 on the final text, then persist.
        ``embedding`` is the vector of ``description``; without a description the stored
        vector is kept. ``gate``: layer 1's mark, kept in the metadata (``brain.review``)."""
        vector = None if description is None else await self._vector(description, embedding)
        async with self._rt.db.transaction() as conn:
            current, stored = await store.get_for_update(
                conn, agent_id=agent_id, decision_id=decision_id
            )
            if not current.active:
                return FinalizeResult(current.session_id, None, reason="already rejected")
            if current.finalized:
                return FinalizeResult(current.session_id, current)
            marked = policy.gate_marked(current, gate)
            final = policy.final_values(
                self._cfg, current, stored,
                description=description, embedding=vector, reasoning=reasoning,
                confidence=confidence, stakes=stakes, category=category,
                classifier=self.classifier, tool_errors=tool_errors,
            )  # fmt: skip
            if not final.verdict.passed:
                assert final.verdict.rule is not None
                rule = final.verdict.rule
                return await self._reject(conn, current, Layer.QUALITY_GATE, rule, marked)
            # Layer 2 again: the final text may differ from the started one.
            await store.lock_session(conn, agent_id=agent_id, session_id=current.session_id)
            recent = await self._recent(conn, agent_id, current.session_id, exclude=current.id)
            dup = policy.duplicate(self._cfg, final.description, final.embedding, recent)
            if dup.duplicate:
                assert dup.method is not None
                return await self._reject(
                    conn, current, Layer.DUPLICATE, dup.method, marked,
                    score=dup.score, related_id=dup.duplicate_of,
                )  # fmt: skip
            return await self._persist(conn, current, final, marked)

    async def abandon(
        self,
        decision_id: uuid.UUID,
        *,
        agent_id: str,
        layer: Layer,
        reason: str,
        gate: dict[str, Any] | None = None,
    ) -> FinalizeResult:
        """Give a deliberation up (layer 1 found it informational, the agent recorded the
        decision itself, or a judge found none: ``Layer.JUDGE``). Idempotent on an inactive
        decision. ``gate``: as in :meth:`conclude`."""
        async with self._rt.db.transaction() as conn:
            current, _ = await store.get_for_update(
                conn, agent_id=agent_id, decision_id=decision_id
            )
            if not current.active:
                return FinalizeResult(current.session_id, None, layer, "already inactive")
            marked = policy.gate_marked(current, gate)
            return await self._reject(conn, current, layer, reason, marked)

    # --- outcomes -----------------------------------------------------------------------

    async def record_outcome(
        self,
        decision_id: uuid.UUID,
        *,
        agent_id: str,
        outcome: DecisionOutcome | str,
        note: str | None = None,
    ) -> Decision:
        """Record how a finalized decision turned out (``success``, ``failure``, ``partial``)
        and why (``note``, kept as the ``decision_outcome`` event's reason); see
        ``brain.outcomes``. The same outcome again without a note changes nothing."""
        check_agent_id(agent_id)
        report = policy.outcome_report(decision_id, outcome, note)
        return await record_outcome(self._rt, report, agent_id=agent_id)

    # --- reads -------------------------------------------------------------------------

    async def get(self, decision_id: uuid.UUID, *, agent_id: str) -> Decision:
        """One decision of ``agent_id`` (active or not); ``NotFoundError`` if there is none."""
        policy.check_id(decision_id, "decision_id")
        check_agent_id(agent_id)
        async with self._rt.db.connection() as conn:
            return await store.get(conn, agent_id=agent_id, decision_id=decision_id)

    async def get_recent_decisions(
        self,
        agent_id: str,
        since: datetime,
        limit: int = 5,
        session_id: str | None = None,
    ) -> list[Decision]:
        """Active decisions of ``agent_id`` created after ``since``, newest first."""
        policy.check_recent(agent_id, since, limit, session_id)
        async with self._rt.db.connection() as conn:
            return await store.recent(
                conn, agent_id=agent_id, since=since, limit=limit, session_id=session_id
            )

    # --- the steps of the writes -------------------------------------------------------

    async def _vector(self, text: str, embedding: Vector | Missing | None) -> Vector | None:
        if isinstance(embedding, Missing):
            return (await self._rt.embed_or_none([text]))[0]
        return embedding

    async def _recent(
        self,
        conn: AsyncConnection,
        agent_id: str,
        session_id: str,
        *,
        exclude: uuid.UUID | None = None,
    ) -> list[RecentDecision]:
        """Layer 2's candidates; the caller holds the session lock."""
        return await store.recent_for_dedup(
            conn,
            agent_id=agent_id,
            session_id=session_id,
            since=policy.dedup_since(self._cfg, self._rt.clock.now()),
            limit=self._cfg.dedup_recent_limit,
            exclude=exclude,
        )

    def _event(
        self,
        decision: Decision,
        kind: EventKind,
        *,
        decided_by: DecidedBy = DecidedBy.RULE,
        **extra: Any,
    ) -> Event:
        return Event(
            agent_id=decision.agent_id,
            kind=MemoryKind.DECISION,
            memory_id=decision.id,
            event=kind,
            decided_by=decided_by,
            at=self._rt.clock.now(),
            **extra,
        )

    async def _reject(
        self,
        conn: AsyncConnection,
        decision: Decision,
        layer: Layer,
        reason: str,
        marked: dict[str, Any],
        *,
        score: float | None = None,
        related_id: uuid.UUID | None = None,
    ) -> FinalizeResult:
        """Soft delete: the row stays for audit with its reason, and an event says why.
        ``marked``: further values to set (``policy.gate_marked``)."""
        why = policy.rejection_reason(layer, reason)
        values = {"active": False, "rejection_reason": why, "updated_at": self._rt.clock.now()}
        await store.update(conn, decision, {**values, **marked})
        rejected = self._event(
            decision, EventKind.REJECTED,
            decided_by=DecidedBy.JUDGE if layer is Layer.JUDGE else DecidedBy.RULE,
            reason=why, score=score, related_id=related_id, details={"layer": layer.value},
        )  # fmt: skip
        await write_events(conn, [rejected])
        return FinalizeResult(decision.session_id, None, layer, reason, related_id)

    async def _persist(
        self, conn: AsyncConnection, current: Decision, final: Finalized, marked: dict[str, Any]
    ) -> FinalizeResult:
        """Store the final values; a changed confidence gets its event (with the gate's
        quality score when the gate set it)."""
        values = {**final.values, **marked, "finalized": True, "updated_at": self._rt.clock.now()}
        decision = await store.update(conn, current, values)
        events = [self._event(decision, EventKind.DECISION_FINALIZED)]
        if decision.confidence != current.confidence:
            details: dict[str, Any] = {"from": current.confidence, "to": decision.confidence}
            if final.quality is not None:
                details["quality"] = final.quality
            reason = None if final.quality is None else "quality gate: quality score"
            changed = self._event(
                decision, EventKind.CONFIDENCE_CHANGED,
                reason=reason, score=decision.confidence, details=details,
            )  # fmt: skip
            events.append(changed)
        await write_events(conn, events)
        return FinalizeResult(decision.session_id, decision)
