"""Pure learn policy: given a new fact and the current facts it could touch, decide what to
write. The service loads the candidates, calls :func:`plan_learn`, and applies the plan.

Precedence (the seed's rules first):
1. Same subject (normalised): a duplicate of the current same-subject fact reinforces it;
   anything else supersedes *every* current fact of that subject — recency wins, whatever
   the old confidence was.
2. No subject match: a duplicate neighbour is reinforced instead of storing a second copy.
3. Otherwise the fact is stored; neighbours classified as an update of the same slot (or a
   duplicate of it) are superseded; neighbours that say the opposite are linked as a
   contradiction for consolidation to resolve.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime

from memory_kernel.heart.facts.normalise import TextFeatures
from memory_kernel.heart.facts.relation import (
    PairRelation,
    RelationThresholds,
    classify_pair,
)
from memory_kernel.models.facts import LearnAction

__all__ = ["Candidate", "LearnPlan", "NewFact", "Retirement", "plan_learn", "reinforced"]


@dataclass(frozen=True, slots=True)
class NewFact:
    features: TextFeatures
    subject_key: str | None


@dataclass(frozen=True, slots=True)
class Candidate:
    """A current fact the new one may relate to. ``similarity`` is the cosine of the two
    embeddings (``None`` when one of them has no vector yet)."""

    id: uuid.UUID
    features: TextFeatures
    subject_key: str | None
    similarity: float | None
    valid_from: datetime


@dataclass(frozen=True, slots=True)
class Retirement:
    id: uuid.UUID
    reason: str
    similarity: float | None


@dataclass(frozen=True, slots=True)
class LearnPlan:
    action: LearnAction
    reason: str
    reinforce: uuid.UUID | None = None  # set iff action is REINFORCED
    similarity: float | None = None
    supersede: tuple[Retirement, ...] = ()
    contradicts: tuple[Retirement, ...] = field(default_factory=tuple)


def reinforced(confidence: float, times: int = 1) -> float:
    """Confidence after ``times`` pieces of evidence, each ``c += 0.05 * (1 - c)``."""
    return 1.0 - (1.0 - confidence) * 0.95**times


def _verdict(new: NewFact, old: Candidate, t: RelationThresholds) -> tuple[PairRelation, str]:
    if new.features.words == old.features.words:
        return PairRelation.DUPLICATE, "same text"
    if old.similarity is None:
        return PairRelation.UNRELATED, "no vector to compare"
    verdict = classify_pair(old.features, new.features, old.similarity, t)
    return verdict.relation, verdict.reason


def _subject_plan(
    new: NewFact, same_subject: list[Candidate], t: RelationThresholds
) -> LearnPlan | None:
    for old in same_subject:
        relation, reason = _verdict(new, old, t)
        if relation is PairRelation.DUPLICATE:
            return LearnPlan(
                action=LearnAction.REINFORCED,
                reason=f"same subject, {reason}",
                reinforce=old.id,
                similarity=old.similarity,
            )
    return None


def plan_learn(
    new: NewFact, candidates: list[Candidate], thresholds: RelationThresholds
) -> LearnPlan:
    """What learning ``new`` does, given the current facts it could touch."""
    same_subject = [c for c in candidates if new.subject_key and c.subject_key == new.subject_key]
    others = [c for c in candidates if c not in same_subject]
    if same_subject:
        duplicate = _subject_plan(new, same_subject, thresholds)
        if duplicate is not None:
            return duplicate
    supersede = [Retirement(c.id, "same subject", c.similarity) for c in same_subject]
    contradicts: list[Retirement] = []
    duplicates: list[tuple[Candidate, str]] = []
    for old in others:
        relation, reason = _verdict(new, old, thresholds)
        other_subject = bool(new.subject_key and old.subject_key)  # keys differ here
        if relation is PairRelation.CONTRADICTION:
            contradicts.append(Retirement(old.id, reason, old.similarity))
        elif other_subject:
            continue  # explicitly about different things: never merged or replaced
        elif relation is PairRelation.DUPLICATE:
            duplicates.append((old, reason))
        elif relation is PairRelation.UPDATE:
            supersede.append(Retirement(old.id, reason, old.similarity))
    if duplicates and not supersede:
        best, reason = max(duplicates, key=lambda d: d[0].similarity or 1.0)
        return LearnPlan(
            action=LearnAction.REINFORCED,
            reason=reason,
            reinforce=best.id,
            similarity=best.similarity,
        )
    # Stored anyway (it replaces something): copies of the old value go with it.
    supersede += [
        Retirement(c.id, f"duplicate of the newer fact ({r})", c.similarity) for c, r in duplicates
    ]
    return _store_plan(supersede, contradicts)


def _store_plan(supersede: list[Retirement], contradicts: list[Retirement]) -> LearnPlan:
    if supersede:
        reasons = sorted({r.reason for r in supersede})
        return LearnPlan(
            action=LearnAction.SUPERSEDED,
            reason="; ".join(reasons),
            supersede=tuple(supersede),
            contradicts=tuple(contradicts),
            similarity=max((r.similarity or 0.0 for r in supersede), default=None),
        )
    if contradicts:
        return LearnPlan(
            action=LearnAction.CONTRADICTION,
            reason="; ".join(sorted({r.reason for r in contradicts})),
            contradicts=tuple(contradicts),
            similarity=max((r.similarity or 0.0 for r in contradicts), default=None),
        )
    return LearnPlan(action=LearnAction.ADDED, reason="new fact")
