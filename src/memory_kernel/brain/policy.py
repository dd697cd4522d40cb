"""The decision rules, pure: what a start, a finalize and an abandon decide.

The service (``service.py``) loads rows under the session lock and writes what these
functions decide; nothing here does I/O. The layers themselves live in pure helper modules:
layer 2's comparison in ``dedup.py``, layer 3's rules and quality score in ``gate.py``.

- Layer 2 (dedup) compares a description with the same session's active decisions of the
  last ``dedup_window_s`` (at most ``dedup_recent_limit`` of them) that have no outcome yet:
  cosine when both sides have a vector, keyword containment otherwise. A decision with an
  outcome is a closed attempt, so the same action decided again is a new attempt.
- Layer 3 (the quality gate) judges the *final* values of a deliberation: the started ones
  overlaid with what finalize changes. A deliberation that passes without anyone's
  confidence trades the start's placeholder for the confidence of the gate's quality score,
  since passive recall (> 0.5) never injects the placeholder.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from memory_kernel.brain.dedup import RecentDecision, find_duplicate
from memory_kernel.brain.gate import (
    Classifier,
    check_quality,
    confidence_from_quality,
    quality_score,
)
from memory_kernel.brain.review import GATE_KEY
from memory_kernel.brain.stats import Layer
from memory_kernel.config.brain import BrainConfig
from memory_kernel.errors import ValidationError
from memory_kernel.models.decisions import (
    MAX_DECISION_BYTES,
    PLACEHOLDER_CONFIDENCE,
    Decision,
    DedupVerdict,
    GateVerdict,
    OutcomeReport,
)
from memory_kernel.models.enums import DecisionOutcome, Stakes
from memory_kernel.validation import check_agent_id, check_text

if TYPE_CHECKING:
    from memory_kernel.runtime import Vector

__all__ = [
    "FinalizeResult",
    "Finalized",
    "StartResult",
    "check_recent",
    "dedup_since",
    "duplicate",
    "final_values",
    "gate_marked",
    "outcome_changes",
    "outcome_report",
    "rejection_reason",
    "stakes",
]


@dataclass(frozen=True, slots=True)
class StartResult:
    """``decision_id`` of the new deliberation, or ``None`` with the duplicate verdict."""

    decision_id: uuid.UUID | None
    dedup: DedupVerdict


@dataclass(frozen=True, slots=True)
class FinalizeResult:
    """The finalized decision, or ``None`` with the layer and reason that rejected it;
    ``session_id`` is the decision's (for the counters' log line)."""

    session_id: str
    decision: Decision | None
    layer: Layer | None = None
    reason: str | None = None
    related_id: uuid.UUID | None = None


@dataclass(frozen=True, slots=True)
class Finalized:
    """Layer 3's verdict on the final values of a deliberation.

    ``values`` are the columns to store when it passes (``confidence`` already derived from
    ``quality`` when the gate rated it); ``quality`` is the gate's score when it set the
    confidence, else ``None``."""

    verdict: GateVerdict
    values: dict[str, Any]
    quality: float | None = None

    @property
    def description(self) -> str:
        return str(self.values["description"])

    @property
    def embedding(self) -> Vector | None:
        vector: Vector | None = self.values["embedding"]
        return vector


def draft_fields(
    agent_id: str,
    session_id: str,
    description: str,
    *,
    episode_id: uuid.UUID | None,
    frame: str | None,
    stakes: Stakes,
    category: str | None,
) -> dict[str, Any]:
    """The columns of a started deliberation: active, not finalized, with the placeholder
    confidence until the gate or the caller gives it one."""
    return {
        "agent_id": agent_id,
        "session_id": session_id,
        "episode_id": episode_id,
        "description": description,
        "confidence": PLACEHOLDER_CONFIDENCE,
        "stakes": stakes.value,
        "category": category,
        "frame": frame,
        "active": True,
        "finalized": False,
    }


def optional_text(value: str | None, field: str) -> str | None:
    """A decision's optional text (``frame``, ``category``, ``reasoning``) within the limit
    of ``DecisionInput``'s (``MAX_DECISION_BYTES``); empty is ``None``."""
    if value is None:
        return None
    return check_text(value, field=field, max_bytes=MAX_DECISION_BYTES, allow_empty=True) or None


def check_id(value: object, field: str) -> uuid.UUID:
    if not isinstance(value, uuid.UUID):
        raise ValidationError(f"{field} must be a UUID, got {type(value).__name__}")
    return value


def stakes(value: Stakes | str) -> Stakes:
    """``value`` as :class:`Stakes`; ``ValidationError`` for an unknown level."""
    try:
        return Stakes(value)
    except ValueError as exc:
        raise ValidationError(f"stakes must be one of {[s.value for s in Stakes]}") from exc


def check_recent(agent_id: str, since: object, limit: object, session_id: str | None) -> None:
    """``ValidationError`` unless these are the arguments of a read of recent decisions."""
    check_agent_id(agent_id)
    if session_id is not None:
        check_agent_id(session_id, field="session_id")
    if not isinstance(since, datetime) or since.tzinfo is None:
        raise ValidationError("since must be a timezone-aware datetime")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1000:
        raise ValidationError("limit must be an integer between 1 and 1000")


def dedup_since(cfg: BrainConfig, now: datetime) -> datetime:
    """Start of layer 2's window: decisions created after it are compared."""
    return now - timedelta(seconds=cfg.dedup_window_s)


def duplicate(
    cfg: BrainConfig, description: str, vector: Vector | None, recent: Sequence[RecentDecision]
) -> DedupVerdict:
    """Layer 2: the recent decision ``description`` duplicates, if any."""
    return find_duplicate(
        description,
        vector,
        recent,
        cosine_threshold=cfg.dedup_cosine,
        containment_threshold=cfg.dedup_containment,
    )


def final_values(
    cfg: BrainConfig,
    current: Decision,
    stored: Vector | None,
    *,
    description: str | None,
    embedding: Vector | None,
    reasoning: str | None,
    confidence: float | None,
    stakes: Stakes | None,
    category: str | None,
    classifier: Classifier | None = None,
    tool_errors: bool = False,
) -> Finalized:
    """The values a finalize stores, and layer 3's verdict on them.

    ``embedding`` is the vector of ``description`` (``None``: there is none); it replaces
    ``stored`` only when the description changed. A given ``confidence`` always wins.
    ``classifier`` and ``tool_errors`` go to the gate (:func:`gate.check_quality`)."""
    changed = description is not None and description != current.description
    values: dict[str, Any] = {
        "description": description if changed else current.description,
        "embedding": embedding if changed else stored,
        "reasoning": current.reasoning if reasoning is None else reasoning,
        "confidence": current.confidence if confidence is None else confidence,
        "stakes": (current.stakes if stakes is None else stakes).value,
        "category": current.category if category is None else category,
    }
    verdict = check_quality(
        values["description"],
        confidence=values["confidence"],
        stakes=Stakes(values["stakes"]),
        min_chars=cfg.min_description_chars,
        reasoning=values["reasoning"],
        classifier=classifier,
        tool_errors=tool_errors,
    )
    unrated = confidence is None and current.confidence == PLACEHOLDER_CONFIDENCE
    if not verdict.passed or not unrated:
        return Finalized(verdict, values)
    quality = quality_score(
        values["description"], reasoning=values["reasoning"], min_chars=cfg.min_description_chars
    )
    values["confidence"] = confidence_from_quality(quality)
    return Finalized(verdict, values, quality)


def outcome_report(
    decision_id: uuid.UUID, outcome: DecisionOutcome | str, note: str | None
) -> OutcomeReport:
    """The validated report of ``kernel.brain.record_outcome``'s arguments."""
    return OutcomeReport(decision_id=decision_id, outcome=outcome, note=note)


def outcome_changes(current: Decision, report: OutcomeReport) -> bool:
    """Whether recording ``report`` changes anything: a new outcome, or a note to keep. Only
    a finalized, active decision has an outcome (``ValidationError`` otherwise): a rejected
    one was never a decision, and a deliberation has not been decided yet."""
    if not current.active:
        raise ValidationError(f"decision {current.id} was rejected: it has no outcome")
    if not current.finalized:
        raise ValidationError(f"decision {current.id} is still deliberating: finalize it first")
    return current.outcome is not report.outcome or report.note is not None


def rejection_reason(layer: Layer, reason: str) -> str:
    """What a rejected decision's ``rejection_reason`` (and its event) say."""
    return f"{layer.value}: {reason}"


def gate_marked(current: Decision, gate: dict[str, Any] | None) -> dict[str, Any]:
    """The values that keep layer 1's mark in the decision's metadata (``brain.review``);
    none without one."""
    if gate is None:
        return {}
    return {"metadata": {**current.metadata, GATE_KEY: gate}}
