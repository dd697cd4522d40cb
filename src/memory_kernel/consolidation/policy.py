"""Pure confidence policy: time decay, evidence growth, deprecation.

Decay is applied incrementally. A fact's decay clock starts at the later of its last
evidence and its last change; each run multiplies by ``exp(-rate * days)`` over the time
since then and, when it writes, moves the clock to now. Products of exponentials add up, so
the confidence is the seed's ``c * exp(-rate * days since last evidence)`` however often
consolidation runs — and a second run right after the first changes nothing.
"""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass
from datetime import datetime

from memory_kernel.heart.facts.policy import reinforced

__all__ = [
    "ConfidenceChange",
    "ConfidenceRules",
    "ConfidenceState",
    "Evidence",
    "decayed",
    "plan_confidence",
    "should_deprecate",
]

_DAY_S = 86_400.0


@dataclass(frozen=True, slots=True)
class ConfidenceRules:
    decay_per_day: float
    min_change: float
    deprecate_below: float
    #: Confidences where retrieval changes (passive / active recall, deprecation): a decay
    #: that crosses one is always written, however small.
    tiers: tuple[float, ...] = ()
    #: Categories whose facts do not decay with time (``steady_categories``).
    steady: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class ConfidenceState:
    """The columns of an active fact the confidence rules read."""

    id: uuid.UUID
    confidence: float
    last_evidence_at: datetime
    updated_at: datetime
    category: str | None = None


@dataclass(frozen=True, slots=True)
class Evidence:
    """Supporting episodes found for one fact in this run."""

    episode_ids: tuple[uuid.UUID, ...]
    latest: datetime  # when the newest of them ended


@dataclass(frozen=True, slots=True)
class ConfidenceChange:
    id: uuid.UUID
    before: float
    after: float
    decay_days: float
    evidence: tuple[uuid.UUID, ...]
    last_evidence_at: datetime

    @property
    def reason(self) -> str:
        parts = []
        if self.decay_days > 0:
            parts.append(f"decay over {self.decay_days:.1f} days")
        if self.evidence:
            parts.append(f"{len(self.evidence)} supporting episode(s)")
        return ", ".join(parts) or "unchanged"


def decayed(confidence: float, days: float, rate: float) -> float:
    """``confidence * exp(-rate * days)``; no decay for non-positive spans."""
    if days <= 0 or rate <= 0:
        return confidence
    return confidence * math.exp(-rate * days)


def decay_anchor(state: ConfidenceState) -> datetime:
    """Where the decay clock of a fact stands (see the module docstring)."""
    return max(state.last_evidence_at, state.updated_at)


def plan_confidence(
    state: ConfidenceState, evidence: Evidence | None, now: datetime, rules: ConfidenceRules
) -> ConfidenceChange | None:
    """The new confidence of one fact, or ``None`` when nothing should be written.

    Decay first (over the time the fact went without evidence or change; none for a steady
    category), then one asymptotic step ``c += 0.05 * (1 - c)`` per supporting episode.
    """
    days = max(0.0, (now - decay_anchor(state)).total_seconds() / _DAY_S)
    rate = 0.0 if state.category in rules.steady else rules.decay_per_day
    after = decayed(state.confidence, days, rate)
    ids: tuple[uuid.UUID, ...] = ()
    last = state.last_evidence_at
    if evidence is not None and evidence.episode_ids:
        ids = evidence.episode_ids
        after = reinforced(after, len(ids))
        last = max(last, evidence.latest)
    after = min(1.0, max(0.0, after))
    # Evidence is always written (it extends derived_from); a small decay waits and grows,
    # unless it moves the fact across a retrieval tier. Every write of an active fact
    # re-inserts it into the HNSW index, so skipping small ones is what keeps
    # a nightly run proportional to what changed rather than to the size of the store.
    crosses = any((state.confidence >= t) != (after >= t) for t in rules.tiers)
    if not ids and not crosses and abs(state.confidence - after) < rules.min_change:
        return None
    return ConfidenceChange(
        id=state.id,
        before=state.confidence,
        after=after,
        decay_days=days,
        evidence=ids,
        last_evidence_at=last,
    )


def should_deprecate(confidence: float, rules: ConfidenceRules) -> bool:
    """Seed: below the threshold a fact is excluded from every retrieval."""
    return confidence < rules.deprecate_below
