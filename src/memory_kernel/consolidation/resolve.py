"""Pure: from a pair plan to write units, and from judge verdicts to validated units."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

from memory_kernel.consolidation.apply import ContradictionUnit, MergeUnit, SupersedeUnit, Unit
from memory_kernel.consolidation.judging import (
    ConflictFact,
    ConflictKind,
    ConflictRequest,
    ConflictVerdict,
    Resolution,
)
from memory_kernel.consolidation.plans import FactView, Pair, PairPlan, relation_between, winner_of
from memory_kernel.heart.facts.normalise import features
from memory_kernel.heart.facts.relation import PairRelation, RelationThresholds
from memory_kernel.models.enums import DecidedBy

__all__ = ["Case", "judge_cases", "rule_units", "verdict_units"]

# A judge sees at most this many facts per question; a larger ambiguous cluster stays as is.
MAX_CASE_FACTS = 8
_NEVER_MERGED = (PairRelation.UPDATE, PairRelation.CONTRADICTION)


@dataclass(frozen=True, slots=True)
class Case:
    """One ambiguous question: the facts, how similar, and why the rules hesitated."""

    kind: ConflictKind
    ids: tuple[uuid.UUID, ...]
    similarity: float
    reason: str

    def request(self, agent_id: str, views: Mapping[uuid.UUID, FactView]) -> ConflictRequest:
        shown = tuple(
            ConflictFact(id=i, content=views[i].content, category=views[i].category,
                         confidence=views[i].confidence, stated_at=views[i].valid_from)
            for i in self.ids
        )  # fmt: skip
        return ConflictRequest(
            agent_id=agent_id, kind=self.kind, facts=shown, similarity=self.similarity,
            rule_reason=self.reason,
        )  # fmt: skip


def rule_units(plan: PairPlan) -> list[Unit]:
    """What the rules decide alone: clear contradictions, then auto-merged clusters."""
    units: list[Unit] = [
        ContradictionUnit(a=d.pair.a, b=d.pair.b, similarity=d.pair.similarity,
                          reason=f"clear contradiction: {d.reason}", decided_by=DecidedBy.RULE)
        for d in plan.clear_contradictions
    ]  # fmt: skip
    units += [
        MergeUnit(winner=c.winner, losers=c.losers, similarity=c.similarity,
                  reason="duplicate cluster (auto-merge)", decided_by=DecidedBy.RULE)
        for c in plan.clusters if c.auto
    ]  # fmt: skip
    return units


def judge_cases(plan: PairPlan) -> tuple[list[Case], list[Case]]:
    """(conflicts, merges) the judge is asked about; oversize clusters are left out."""
    conflicts = [
        Case(ConflictKind.CONFLICT, (d.pair.a, d.pair.b), d.pair.similarity, d.reason)
        for d in plan.conflicts
    ]
    merges = [
        Case(ConflictKind.MERGE, c.members, c.similarity, "low-confidence or contested cluster")
        for c in plan.clusters
        if not c.auto and len(c.members) <= MAX_CASE_FACTS
    ]
    merges += [
        Case(ConflictKind.MERGE, (d.pair.a, d.pair.b), d.pair.similarity, d.reason)
        for d in plan.ambiguous_merges
    ]
    return conflicts, merges


def _values_kept(content: str, winner: FactView) -> bool:
    """A judge's combined wording may not change a value (the facts policy's rule)."""
    return features(content).values == features(winner.content).values


def _merge_valid(
    case: Case, winner: FactView, views: Mapping[uuid.UUID, FactView], t: RelationThresholds
) -> bool:
    for other in case.ids:
        if other == winner.id:
            continue
        relation, _ = relation_between(winner, views[other], case.similarity, t)
        if relation in _NEVER_MERGED:
            return False
    return True


def verdict_units(
    case: Case,
    verdict: ConflictVerdict,
    views: Mapping[uuid.UUID, FactView],
    thresholds: RelationThresholds,
    *,
    penalised: frozenset[tuple[uuid.UUID, uuid.UUID]],
) -> list[Unit] | None:
    """The units a judge's verdict asks for, or ``None`` when the verdict is invalid."""
    members = [views[i] for i in case.ids]
    winner_id = verdict.winner_id or winner_of(members).id
    if winner_id not in case.ids:
        return None
    winner = views[winner_id]
    losers = tuple(i for i in case.ids if i != winner_id)
    reason = f"judge: {verdict.reason}"
    if verdict.decision is Resolution.KEEP_BOTH:
        return []
    if verdict.decision is Resolution.SUPERSEDE:
        return [SupersedeUnit(winner_id, losers, case.similarity, reason, DecidedBy.JUDGE)]
    if verdict.decision is Resolution.CONTRADICTION:
        pairs = [p for p in combinations(case.ids, 2) if Pair(*p, 0.0).key not in penalised]
        return [ContradictionUnit(a, b, case.similarity, reason, DecidedBy.JUDGE) for a, b in pairs]
    if not _merge_valid(case, winner, views, thresholds):
        return None  # a changed value or a flipped meaning is never merged
    content = verdict.merged_content
    if content is not None and not _values_kept(content, winner):
        return None
    return [
        MergeUnit(winner_id, losers, case.similarity, reason, DecidedBy.JUDGE, new_content=content)
    ]


def cap_cases(cases: Sequence[Case], limit: int) -> tuple[list[Case], list[Case]]:
    """The first ``limit`` cases (most similar first) and the rest."""
    ordered = sorted(cases, key=lambda c: (-c.similarity, [i.bytes for i in c.ids]))
    return ordered[:limit], ordered[limit:]
