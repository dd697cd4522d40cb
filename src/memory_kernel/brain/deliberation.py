"""The write side of decisions, in the caller's transaction: record, start, finalize, abandon.

These functions load rows, call the pure policies (``dedup.find_duplicate``,
``gate.check_quality``) and write the outcome with its ``memory_events`` row. They never
commit, never embed (vectors are computed by the caller *before* the transaction so no
connection waits on the embedder) and never count (the caller counts after commit).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import numpy as np
import numpy.typing as npt
from sqlalchemy.ext.asyncio import AsyncConnection

from memory_kernel.brain import repository as repo
from memory_kernel.brain.dedup import RecentDecision, find_duplicate
from memory_kernel.brain.gate import check_quality, confidence_from_quality, quality_score
from memory_kernel.brain.stats import Layer
from memory_kernel.models.decisions import (
    PLACEHOLDER_CONFIDENCE,
    Decision,
    DecisionInput,
    DedupVerdict,
    GateVerdict,
)
from memory_kernel.models.enums import DecidedBy, EventKind, MemoryKind, Stakes
from memory_kernel.runtime import Runtime
from memory_kernel.storage.events import Event, write_events

__all__ = ["FinalizeResult", "StartResult", "abandon_in", "finalize_in", "record_in", "start_in"]

Vector = npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class StartResult:
    """``decision_id`` of the new deliberation, or ``None`` with the duplicate verdict."""

    decision_id: uuid.UUID | None
    dedup: DedupVerdict


@dataclass(frozen=True, slots=True)
class FinalizeResult:
    """The finalized decision, or ``None`` with the layer and reason that rejected it."""

    decision: Decision | None
    layer: Layer | None = None
    reason: str | None = None
    related_id: uuid.UUID | None = None


def _event(
    decision_id: uuid.UUID,
    agent_id: str,
    kind: EventKind,
    rt: Runtime,
    *,
    decided_by: DecidedBy = DecidedBy.RULE,
    **extra: Any,
) -> Event:
    return Event(
        agent_id=agent_id,
        kind=MemoryKind.DECISION,
        memory_id=decision_id,
        event=kind,
        decided_by=decided_by,
        at=rt.clock.now(),
        **extra,
    )


async def record_in(
    conn: AsyncConnection, rt: Runtime, decision: DecisionInput, *, embedding: Vector | None
) -> Decision:
    """The explicit path: stored finalized and active, no filter applies."""
    now = rt.clock.now()
    row = await repo.insert(
        conn,
        {
            **decision.model_dump(),
            "id": uuid.uuid4(),
            "stakes": decision.stakes.value,
            "active": True,
            "finalized": True,
            "embedding": embedding,
            "created_at": now,
            "updated_at": now,
        },
    )
    event = _event(
        row.id, row.agent_id, EventKind.DECISION_RECORDED, rt, decided_by=DecidedBy.CALLER
    )
    await write_events(conn, [event])
    return row


async def _recent(
    conn: AsyncConnection,
    rt: Runtime,
    *,
    agent_id: str,
    session_id: str,
    exclude: uuid.UUID | None = None,
) -> list[RecentDecision]:
    cfg = rt.config.brain
    return await repo.recent_for_dedup(
        conn,
        agent_id=agent_id,
        session_id=session_id,
        since=rt.clock.now() - timedelta(seconds=cfg.dedup_window_s),
        limit=cfg.dedup_recent_limit,
        exclude=exclude,
    )


def _duplicate(
    rt: Runtime, description: str, vector: Vector | None, recent: list[RecentDecision]
) -> DedupVerdict:
    cfg = rt.config.brain
    return find_duplicate(
        description,
        vector,
        recent,
        cosine_threshold=cfg.dedup_cosine,
        containment_threshold=cfg.dedup_containment,
    )


async def start_in(
    conn: AsyncConnection,
    rt: Runtime,
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
) -> StartResult:
    """Layer 2 at start: no new deliberation when the session decided the same thing lately.
    ``session_locked``: the caller already holds the session lock (saves a round trip)."""
    if not session_locked:
        await repo.lock_session(conn, agent_id=agent_id, session_id=session_id)
    recent = await _recent(conn, rt, agent_id=agent_id, session_id=session_id)
    verdict = _duplicate(rt, description, embedding, recent)
    if verdict.duplicate:
        return StartResult(decision_id=None, dedup=verdict)
    now = rt.clock.now()
    row = await repo.insert(
        conn,
        {
            "agent_id": agent_id,
            "id": uuid.uuid4(),
            "session_id": session_id,
            "episode_id": episode_id,
            "description": description,
            "confidence": PLACEHOLDER_CONFIDENCE,
            "stakes": stakes.value,
            "category": category,
            "frame": frame,
            "active": True,
            "finalized": False,
            "embedding": embedding,
            "created_at": now,
            "updated_at": now,
        },
    )
    await write_events(conn, [_event(row.id, agent_id, EventKind.DECISION_STARTED, rt)])
    return StartResult(decision_id=row.id, dedup=verdict)


async def _reject(
    conn: AsyncConnection,
    rt: Runtime,
    decision: Decision,
    *,
    layer: Layer,
    reason: str,
    score: float | None = None,
    related_id: uuid.UUID | None = None,
) -> FinalizeResult:
    """Soft delete: the row stays for audit with its reason, and an event says why."""
    await repo.update(
        conn,
        agent_id=decision.agent_id,
        decision_id=decision.id,
        values={
            "active": False,
            "rejection_reason": f"{layer.value}: {reason}",
            "updated_at": rt.clock.now(),
        },
    )
    event = _event(
        decision.id,
        decision.agent_id,
        EventKind.REJECTED,
        rt,
        reason=f"{layer.value}: {reason}",
        score=score,
        related_id=related_id,
        details={"layer": layer.value},
    )
    await write_events(conn, [event])
    return FinalizeResult(decision=None, layer=layer, reason=reason, related_id=related_id)


async def abandon_in(
    conn: AsyncConnection,
    rt: Runtime,
    decision_id: uuid.UUID,
    *,
    agent_id: str,
    layer: Layer,
    reason: str,
) -> FinalizeResult:
    """Give a deliberation up (layer 1 found the response informational, or the agent
    recorded the decision explicitly). Idempotent on an already inactive decision."""
    decision, _ = await repo.get_for_update(conn, agent_id=agent_id, decision_id=decision_id)
    if not decision.active:
        return FinalizeResult(decision=None, layer=layer, reason="already inactive")
    return await _reject(conn, rt, decision, layer=layer, reason=reason)


async def finalize_in(
    conn: AsyncConnection,
    rt: Runtime,
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
) -> FinalizeResult:
    """Layer 3 (quality gate) then layer 2 again on the final text, then persist.

    ``embedding`` is the vector of ``description`` when it replaces the started one (``None``
    when the embedder was unavailable); otherwise the stored vector is kept. Without a
    ``confidence`` a decision that passes the gate trades the start's placeholder for the
    confidence of the gate's quality score (``gate.confidence_from_quality``); a given
    ``confidence`` always wins.
    """
    current, stored = await repo.get_for_update(conn, agent_id=agent_id, decision_id=decision_id)
    if not current.active:
        return FinalizeResult(decision=None, reason="already rejected")
    if current.finalized:
        return FinalizeResult(decision=current)
    changed = description is not None and description != current.description
    final: dict[str, Any] = {
        "description": description if changed else current.description,
        "embedding": embedding if changed else stored,
        "reasoning": current.reasoning if reasoning is None else reasoning,
        "confidence": current.confidence if confidence is None else confidence,
        "stakes": (current.stakes if stakes is None else stakes).value,
        "category": current.category if category is None else category,
    }
    unrated = confidence is None and current.confidence == PLACEHOLDER_CONFIDENCE
    verdict, quality = _gate(rt, final, rate=unrated)
    if not verdict.passed:
        assert verdict.rule is not None
        return await _reject(conn, rt, current, layer=Layer.QUALITY_GATE, reason=verdict.rule)
    if quality is not None:  # the placeholder would keep it out of passive recall (> 0.5)
        final["confidence"] = confidence_from_quality(quality)
    rejected = await _screen(conn, rt, current, final, session_locked=session_locked)
    return rejected or await _persist(conn, rt, current, values=final, quality=quality)


def _gate(rt: Runtime, final: dict[str, Any], *, rate: bool) -> tuple[GateVerdict, float | None]:
    """Layer 3's verdict on the final values and, for a decision that passed with nobody's
    confidence (``rate``), the gate's quality score its confidence is derived from."""
    min_chars = rt.config.brain.min_description_chars
    verdict = check_quality(
        final["description"],
        confidence=final["confidence"],
        stakes=Stakes(final["stakes"]),
        min_chars=min_chars,
    )
    if not verdict.passed or not rate:
        return verdict, None
    quality = quality_score(final["description"], reasoning=final["reasoning"], min_chars=min_chars)
    return verdict, quality


async def _screen(
    conn: AsyncConnection,
    rt: Runtime,
    current: Decision,
    final: dict[str, Any],
    *,
    session_locked: bool,
) -> FinalizeResult | None:
    """Layer 2 on the final text (it may differ from the started one), after the gate
    passed it; the rejection, or ``None`` when it duplicates nothing recent."""
    text = final["description"]
    if not session_locked:
        await repo.lock_session(conn, agent_id=current.agent_id, session_id=current.session_id)
    recent = await _recent(
        conn, rt, agent_id=current.agent_id, session_id=current.session_id, exclude=current.id
    )
    dup = _duplicate(rt, text, final["embedding"], recent)
    if not dup.duplicate:
        return None
    assert dup.method is not None
    return await _reject(
        conn, rt, current, layer=Layer.DUPLICATE, reason=dup.method,
        score=dup.score, related_id=dup.duplicate_of,
    )  # fmt: skip


async def _persist(
    conn: AsyncConnection,
    rt: Runtime,
    current: Decision,
    *,
    values: dict[str, Any],
    quality: float | None,
) -> FinalizeResult:
    """Store the final values; a changed confidence gets its event (with the gate's quality
    score when the gate set it)."""
    now = rt.clock.now()
    decision = await repo.update(
        conn,
        agent_id=current.agent_id,
        decision_id=current.id,
        values={**values, "finalized": True, "updated_at": now},
    )
    events = [_event(decision.id, decision.agent_id, EventKind.DECISION_FINALIZED, rt)]
    if decision.confidence != current.confidence:
        details: dict[str, Any] = {"from": current.confidence, "to": decision.confidence}
        if quality is not None:
            details["quality"] = quality
        events.append(
            _event(
                decision.id,
                decision.agent_id,
                EventKind.CONFIDENCE_CHANGED,
                rt,
                reason=None if quality is None else "quality gate: quality score",
                score=decision.confidence,
                details=details,
            )
        )
    await write_events(conn, events)
    return FinalizeResult(decision=decision)
