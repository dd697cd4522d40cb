"""Pure merge and contradiction planning over candidate pairs.

Each pair found by the nearest-neighbour search is classified with the facts policy
(``heart.facts.relation.classify_pair``), so consolidation and ``learn`` agree on what a
duplicate, a changed value and a flipped meaning are:

- a flipped meaning above ``contradiction_similarity`` is a clear contradiction (both
  confidences halved once, the pair flagged); below it, an ambiguous conflict (judge);
- a changed value is never merged: above ``ambiguous_similarity`` the judge may say which
  one supersedes the other, otherwise both stay;
- a duplicate above ``merge_similarity`` with the same category is a merge edge; merge
  edges form clusters (union-find); a duplicate between ``ambiguous_similarity`` and
  ``merge_similarity`` (or across categories) is an ambiguous merge (judge);
- facts with different explicit subjects are about different things: never merged;
- with a judge, a pair the rules leave open as a restatement and the duplicate scorer rates
  at least ``restatement_probability`` (below its merge threshold) is an ambiguous merge too
  (``heart.facts.restatement``): the paraphrases a lexical embedder cannot tell;
- with a judge, a pair the rules do not decide and the update scorer rates at least
  ``update_probability`` as a new value of the older fact's slot is an ambiguous conflict
  (``heart.facts.relation.update_probability``): the changes of value ``learn`` leaves to
  read-time resolution, retired at write time when the judge says so.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from memory_kernel.consolidation.clusters import connected_components
from memory_kernel.heart.facts.normalise import features
from memory_kernel.heart.facts.relation import (
    PairRelation,
    RelationThresholds,
    classify_pair,
    update_probability,
)
from memory_kernel.heart.facts.restatement import restatement_probability

__all__ = [
    "ClusterPlan",
    "FactView",
    "MergeRules",
    "Pair",
    "PairKind",
    "PairPlan",
    "classify",
    "plan_clusters",
    "plan_pairs",
    "relation_between",
    "winner_of",
]


@dataclass(frozen=True, slots=True)
class MergeRules:
    merge_similarity: float
    merge_min_confidence: float
    ambiguous_similarity: float
    contradiction_similarity: float
    #: With a judge: the duplicate scorer's probability from which a possible restatement
    #: is asked about (None: no judge, or the band is off).
    restatement_probability: float | None = None
    #: With a judge: the update scorer's probability from which a possible new value of the
    #: older fact's slot is asked about (None: no judge, or the band is off).
    update_probability: float | None = None


@dataclass(frozen=True, slots=True)
class FactView:
    """The columns of an active fact merge and contradiction planning read."""

    id: uuid.UUID
    content: str
    category: str | None
    subject_key: str | None
    confidence: float
    evidence_count: int
    valid_from: datetime
    contradicts: frozenset[uuid.UUID] = frozenset()


@dataclass(frozen=True, slots=True)
class Pair:
    a: uuid.UUID
    b: uuid.UUID
    similarity: float

    @property
    def key(self) -> tuple[uuid.UUID, uuid.UUID]:
        return (self.a, self.b) if self.a.bytes <= self.b.bytes else (self.b, self.a)


class PairKind(StrEnum):
    CLEAR_CONTRADICTION = "clear_contradiction"
    AMBIGUOUS_CONFLICT = "ambiguous_conflict"
    MERGE = "merge"
    AMBIGUOUS_MERGE = "ambiguous_merge"
    NONE = "none"


@dataclass(frozen=True, slots=True)
class PairDecision:
    pair: Pair
    kind: PairKind
    relation: PairRelation
    reason: str


@dataclass(frozen=True, slots=True)
class ClusterPlan:
    """A duplicate cluster: merged by the rules (``auto``) or sent to the judge."""

    winner: uuid.UUID
    members: tuple[uuid.UUID, ...]  # the winner first
    auto: bool
    similarity: float  # the weakest merge edge of the cluster

    @property
    def losers(self) -> tuple[uuid.UUID, ...]:
        return self.members[1:]


@dataclass(slots=True)
class PairPlan:
    clear_contradictions: list[PairDecision] = field(default_factory=list)
    conflicts: list[PairDecision] = field(default_factory=list)  # judge: supersede/...
    ambiguous_merges: list[PairDecision] = field(default_factory=list)
    clusters: list[ClusterPlan] = field(default_factory=list)


def _ordered(x: FactView, y: FactView) -> tuple[FactView, FactView]:
    """(older, newer): the facts policy reads a pair as "old statement, new statement"."""
    if (x.valid_from, x.id.bytes) <= (y.valid_from, y.id.bytes):
        return x, y
    return y, x


def relation_between(
    x: FactView, y: FactView, similarity: float, thresholds: RelationThresholds
) -> tuple[PairRelation, str]:
    old, new = _ordered(x, y)
    verdict = classify_pair(features(old.content), features(new.content), similarity, thresholds)
    return verdict.relation, verdict.reason


def classify(
    pair: Pair,
    facts: Mapping[uuid.UUID, FactView],
    rules: MergeRules,
    thresholds: RelationThresholds,
) -> PairDecision:
    x, y = facts[pair.a], facts[pair.b]
    s = pair.similarity
    relation, reason = relation_between(x, y, s, thresholds)

    def decided(kind: PairKind) -> PairDecision:
        return PairDecision(pair=pair, kind=kind, relation=relation, reason=reason)

    if relation is PairRelation.CONTRADICTION:
        clear = s > rules.contradiction_similarity
        return decided(PairKind.CLEAR_CONTRADICTION if clear else PairKind.AMBIGUOUS_CONFLICT)
    if x.subject_key and y.subject_key and x.subject_key != y.subject_key:
        return decided(PairKind.NONE)  # explicitly about different things
    if x.id in y.contradicts or y.id in x.contradicts:
        return decided(PairKind.NONE)  # flagged as contradicting: never merged
    if relation is PairRelation.UPDATE:
        if s >= rules.ambiguous_similarity:
            return decided(PairKind.AMBIGUOUS_CONFLICT)
        return _possible_update(pair, x, y, relation, rules, thresholds) or decided(PairKind.NONE)
    if relation is PairRelation.DUPLICATE:
        if s > rules.merge_similarity and x.category == y.category:
            return decided(PairKind.MERGE)
        ambiguous = s >= rules.ambiguous_similarity
        return decided(PairKind.AMBIGUOUS_MERGE if ambiguous else PairKind.NONE)
    # Near-identical vectors whose words disagree (a value added, a word swapped).
    if s > rules.merge_similarity:
        return decided(PairKind.AMBIGUOUS_MERGE)
    if relation is PairRelation.UNRELATED:
        possible = _possible_update(pair, x, y, relation, rules, thresholds)
        if possible is not None:
            return possible
    band = rules.restatement_probability
    if relation is PairRelation.UNRELATED and band is not None:
        old, new = _ordered(x, y)
        p = restatement_probability(features(old.content), features(new.content), s, thresholds)
        if p >= band:  # the judge is told why it is asked
            why = f"possible restatement in other words (duplicate scorer p={p:.2f})"
            return PairDecision(
                pair=pair, kind=PairKind.AMBIGUOUS_MERGE, relation=relation, reason=why
            )
    return decided(PairKind.NONE)


def _possible_update(
    pair: Pair,
    x: FactView,
    y: FactView,
    relation: PairRelation,
    rules: MergeRules,
    thresholds: RelationThresholds,
) -> PairDecision | None:
    """An ambiguous conflict when the update scorer rates the newer fact a new value of the
    older one's slot at least ``update_probability`` (the judge is told why it is asked);
    ``None``: not."""
    band = rules.update_probability
    if band is None:
        return None
    old, new = _ordered(x, y)
    p = update_probability(
        features(old.content), features(new.content), pair.similarity, thresholds
    )
    if p < band:
        return None
    why = f"possible new value of the older fact's slot (update scorer p={p:.2f})"
    return PairDecision(pair=pair, kind=PairKind.AMBIGUOUS_CONFLICT, relation=relation, reason=why)


def winner_of(members: Iterable[FactView]) -> FactView:
    """Seed: the highest confidence wins; then more evidence, then the newer statement."""
    return max(members, key=lambda f: (f.confidence, f.evidence_count, f.valid_from, f.id.bytes))


def _cluster(
    ids: Sequence[uuid.UUID],
    facts: Mapping[uuid.UUID, FactView],
    weakest: float,
    rules: MergeRules,
    thresholds: RelationThresholds,
    contested: frozenset[uuid.UUID],
) -> ClusterPlan | None:
    members = [facts[i] for i in ids]
    winner = winner_of(members)
    # Union-find is transitive, duplicates are not quite: every member must still be a
    # duplicate of the winner itself (a changed value or flip chained in is left out).
    kept = [
        m
        for m in members
        if m.id != winner.id
        and m.id not in winner.contradicts
        and winner.id not in m.contradicts
        and relation_between(winner, m, weakest, thresholds)[0] is PairRelation.DUPLICATE
    ]
    if not kept:
        return None
    kept.sort(key=lambda f: f.id.bytes)
    group = (winner, *kept)
    # Seed auto-merge criteria: one member confident enough, no contradiction detected.
    confident = max(f.confidence for f in group) > rules.merge_min_confidence
    auto = confident and not any(f.contradicts or f.id in contested for f in group)
    return ClusterPlan(
        winner=winner.id,
        members=(winner.id, *(m.id for m in kept)),
        auto=auto,
        similarity=weakest,
    )


def plan_clusters(
    edges: Sequence[Pair],
    facts: Mapping[uuid.UUID, FactView],
    rules: MergeRules,
    thresholds: RelationThresholds,
    contested: frozenset[uuid.UUID] = frozenset(),
) -> list[ClusterPlan]:
    """Connected components of the merge edges, each validated against its winner;
    a cluster with a ``contested`` member (in a contradiction) goes to the judge."""
    weakest: dict[uuid.UUID, float] = {}
    for edge in edges:
        for end in (edge.a, edge.b):
            weakest[end] = min(weakest.get(end, 1.0), edge.similarity)
    plans = []
    for ids in connected_components((e.a, e.b) for e in edges):
        floor = min(weakest[i] for i in ids)
        plan = _cluster(ids, facts, floor, rules, thresholds, contested)
        if plan is not None:
            plans.append(plan)
    plans.sort(key=lambda p: p.winner.bytes)
    return plans


def plan_pairs(
    pairs: Iterable[Pair],
    facts: Mapping[uuid.UUID, FactView],
    rules: MergeRules,
    thresholds: RelationThresholds,
    *,
    penalised: frozenset[tuple[uuid.UUID, uuid.UUID]] = frozenset(),
) -> PairPlan:
    """Sort every candidate pair into contradictions, conflicts, merges and clusters.

    ``penalised`` holds the pairs (``Pair.key`` order) whose clear contradiction was already
    applied by an earlier run: they are not halved twice.
    """
    plan = PairPlan()
    edges: list[Pair] = []
    contested: set[uuid.UUID] = set()
    for pair in pairs:
        decision = classify(pair, facts, rules, thresholds)
        if decision.relation is PairRelation.CONTRADICTION:
            contested.update((pair.a, pair.b))
        if decision.kind is PairKind.CLEAR_CONTRADICTION:
            if pair.key not in penalised:
                plan.clear_contradictions.append(decision)
        elif decision.kind is PairKind.AMBIGUOUS_CONFLICT:
            plan.conflicts.append(decision)
        elif decision.kind is PairKind.AMBIGUOUS_MERGE:
            plan.ambiguous_merges.append(decision)
        elif decision.kind is PairKind.MERGE:
            edges.append(pair)
    plan.clusters = plan_clusters(edges, facts, rules, thresholds, frozenset(contested))
    in_cluster = {m for c in plan.clusters for m in c.members}
    # A pair already inside a cluster is decided with the cluster.
    plan.ambiguous_merges = [
        d for d in plan.ambiguous_merges if not {d.pair.a, d.pair.b} <= in_cluster
    ]
    return plan
