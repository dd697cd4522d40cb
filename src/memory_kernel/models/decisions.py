"""Decisions: what an agent decided, and the verdicts of the three-layer gate around them."""

from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import Field, StrictFloat, field_validator

from memory_kernel.models.base import InputModel, OutputModel
from memory_kernel.models.enums import DecisionOutcome, Stakes
from memory_kernel.validation import (
    MAX_METADATA_BYTES,
    check_agent_id,
    check_json,
    check_text,
    check_unit_interval,
)

__all__ = [
    "PLACEHOLDER_CONFIDENCE",
    "Decision",
    "DecisionInput",
    "DecisionOutcome",
    "DedupMethod",
    "DedupVerdict",
    "GateRule",
    "GateStats",
    "GateVerdict",
    "LayerStats",
    "OutcomeReport",
]

#: The confidence a deliberation starts with: "not deliberated yet", not a real estimate.
PLACEHOLDER_CONFIDENCE = 0.5
#: Decision texts are short statements; anything larger is a document, not a decision.
MAX_DECISION_BYTES = 64 * 1024


def _text(value: str, field: str) -> str:
    return check_text(value, field=field, max_bytes=MAX_DECISION_BYTES)


def _optional_text(value: str | None, field: str) -> str | None:
    if value is None:
        return None
    return check_text(value, field=field, max_bytes=MAX_DECISION_BYTES, allow_empty=True) or None


class DecisionInput(InputModel):
    """A decision recorded explicitly (the agent's ``record_decision`` tool): no filter applies."""

    agent_id: str
    session_id: str
    description: str
    reasoning: str | None = None
    confidence: StrictFloat = PLACEHOLDER_CONFIDENCE
    stakes: Stakes = Stakes.MEDIUM
    category: str | None = None
    frame: str | None = None
    episode_id: uuid.UUID | None = None
    #: A decision recorded after the fact may already have its outcome.
    outcome: DecisionOutcome | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("agent_id", "session_id")
    @classmethod
    def _ids(cls, value: str, info: Any) -> str:
        return check_agent_id(value, field=info.field_name)

    @field_validator("description")
    @classmethod
    def _description(cls, value: str) -> str:
        return _text(value, "description")

    @field_validator("reasoning", "category", "frame")
    @classmethod
    def _optional(cls, value: str | None, info: Any) -> str | None:
        return _optional_text(value, info.field_name)

    @field_validator("confidence")
    @classmethod
    def _confidence(cls, value: float) -> float:
        return check_unit_interval(value, field="confidence")

    @field_validator("metadata")
    @classmethod
    def _metadata(cls, value: dict[str, Any]) -> dict[str, Any]:
        check_json(value, field="metadata", max_bytes=MAX_METADATA_BYTES)
        return value


class Decision(OutputModel):
    """A stored decision. ``active`` is false once the gate rejected it (kept for audit)."""

    id: uuid.UUID
    agent_id: str
    session_id: str
    episode_id: uuid.UUID | None
    description: str
    reasoning: str | None
    confidence: float
    stakes: Stakes
    category: str | None
    outcome: DecisionOutcome | None
    frame: str | None
    active: bool
    finalized: bool
    rejection_reason: str | None
    metadata: dict[str, Any]
    created_at: datetime
    updated_at: datetime


class OutcomeReport(InputModel):
    """The outcome of an earlier decision, reported in a turn (``TurnOutcome.decision_outcomes``)
    or through ``kernel.brain.record_outcome``; ``note`` says what happened."""

    decision_id: uuid.UUID
    outcome: DecisionOutcome
    note: str | None = None

    @field_validator("note")
    @classmethod
    def _note(cls, value: str | None) -> str | None:
        return _optional_text(value, "note")


class GateRule(StrEnum):
    """Layer 3: why finalize rejected a decision."""

    TOO_SHORT = "too_short"
    PLACEHOLDER_CONFIDENCE = "placeholder_confidence"
    CHAT_PREFIX = "chat_prefix"
    ERROR_TEMPLATE = "error_template"


class GateVerdict(OutputModel):
    """The quality gate's plan: pass, or reject for ``rule`` (``reason`` is for humans)."""

    passed: bool
    rule: GateRule | None = None
    reason: str | None = None


class DedupMethod(StrEnum):
    COSINE = "cosine"
    KEYWORD = "keyword"


class DedupVerdict(OutputModel):
    """Layer 2: whether a description duplicates a recent decision of the same session."""

    duplicate: bool
    duplicate_of: uuid.UUID | None = None
    score: float = 0.0
    method: DedupMethod | None = None


class LayerStats(OutputModel):
    """What one layer rejected, by reason (``informational: completion``, ``too_short``…)."""

    rejected: int = 0
    reasons: dict[str, int] = Field(default_factory=dict)


class GateStats(OutputModel):
    """Counters of the decision gate since the kernel opened (``kernel.stats().decisions``)."""

    turns: int = 0
    deliberations_started: int = 0
    not_deliberated: LayerStats = LayerStats()
    informational: LayerStats = LayerStats()
    duplicate: LayerStats = LayerStats()
    quality_gate: LayerStats = LayerStats()
    recorded: int = 0
    recorded_explicit: int = 0
