"""The string enums of the public API and the database.

The values are stored in the database as text with CHECK constraints, so adding a member
means adding a migration.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = [
    "AdmissionStatus",
    "DecidedBy",
    "DecisionOutcome",
    "EpisodeStatus",
    "EventKind",
    "FactStatus",
    "MemoryKind",
    "Stakes",
]


class FactStatus(StrEnum):
    PENDING_EMBED = "pending_embed"
    ACTIVE = "active"
    SUPERSEDED = "superseded"
    MERGED = "merged"
    DEPRECATED = "deprecated"
    REJECTED = "rejected"


class EpisodeStatus(StrEnum):
    ONGOING = "ongoing"
    COMPLETED = "completed"
    ABANDONED = "abandoned"


class AdmissionStatus(StrEnum):
    """Whether a finished episode earned a place in long-term memory."""

    PENDING = "pending"  # not finished yet
    ACTIVE = "active"
    NOT_ADMITTED = "not_admitted"  # the NOT decision: kept for audit, never retrieved
    SUPERSEDED = "superseded"


class Stakes(StrEnum):
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    CRITICAL = "critical"


class DecisionOutcome(StrEnum):
    """How a decision turned out, once someone knows (``None`` on a decision: pending)."""

    SUCCESS = "success"
    FAILURE = "failure"
    PARTIAL = "partial"


class MemoryKind(StrEnum):
    FACT = "fact"
    EPISODE = "episode"
    DECISION = "decision"


class DecidedBy(StrEnum):
    RULE = "rule"
    JUDGE = "judge"
    CALLER = "caller"
    SYSTEM = "system"


class EventKind(StrEnum):
    LEARNED = "learned"
    REINFORCED = "reinforced"
    SUPERSEDED = "superseded"
    MERGED = "merged"
    DEPRECATED = "deprecated"
    CONFIDENCE_CHANGED = "confidence_changed"
    CONTRADICTION = "contradiction"
    REJECTED = "rejected"
    EMBEDDED = "embedded"
    ADMISSION_ADD = "admission_add"
    ADMISSION_NOT = "admission_not"
    ADMISSION_REPLACE = "admission_replace"
    ADMISSION_MERGE = "admission_merge"
    EPISODE_STARTED = "episode_started"
    EPISODE_REUSED = "episode_reused"
    EPISODE_ENDED = "episode_ended"
    DECISION_RECORDED = "decision_recorded"
    DECISION_STARTED = "decision_started"
    DECISION_FINALIZED = "decision_finalized"
    DECISION_OUTCOME = "decision_outcome"  # a decision's outcome recorded (0008)
    JUDGED_APART = "judged_apart"  # a consolidation judge kept an ambiguous case apart (0014)
    CONTEXT_ASSEMBLED = "context_assembled"  # post_turn keeps the turn's ContextReport
