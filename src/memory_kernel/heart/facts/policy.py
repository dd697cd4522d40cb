"""Pure learn policy: given a new fact and the current facts it could touch, decide what to
write. The service reads the candidates (``store``), calls the decisions here in input
order, and hands the collected :class:`Writes` to the store.

Precedence (the seed's rules first):
1. Same subject (normalised): a duplicate of the current same-subject fact reinforces it;
   anything else supersedes *every* current fact of that subject — recency wins, whatever
   the old confidence was.
2. No subject match: a duplicate neighbour is reinforced instead of storing a second copy.
3. Otherwise the fact is stored; neighbours classified as an update of the same slot (or a
   duplicate of it) are superseded; neighbours that say the opposite are linked as a
   contradiction for consolidation to resolve.

Within a batch the facts are decided one after the other against the stored facts *and*
the batch's earlier facts (a duplicate inside the batch is reinforced, a later value
supersedes an earlier one), so ``learn_many`` leaves the state learning them one by one
leaves. The embedding queue decides pending facts the same way (:func:`decide_pending`).
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from memory_kernel.heart.facts.candidates import AgentState, Candidate, Known, Prepared, Waiting
from memory_kernel.heart.facts.normalise import TextFeatures
from memory_kernel.heart.facts.relation import PairRelation, RelationThresholds, classify_pair
from memory_kernel.models.base import OutputModel
from memory_kernel.models.enums import EventKind, FactStatus
from memory_kernel.models.facts import Fact, LearnAction, LearnOutcome
from memory_kernel.vectors import Vector

__all__ = [
    "Candidate", "Decided", "FactEvent", "LearnPlan", "NewFact", "PendingReport", "Retirement",
    "Writes", "decide_new", "decide_pending", "outcome", "plan_learn", "reinforced",
]  # fmt: skip


@dataclass(frozen=True, slots=True)
class NewFact:
    features: TextFeatures
    subject_key: str | None


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


@dataclass(frozen=True, slots=True)
class FactEvent:
    """One audit event of a fact, decided by a rule (a ``memory_events`` row)."""

    memory_id: uuid.UUID
    event: EventKind
    at: datetime
    reason: str
    score: float | None = None
    related_id: uuid.UUID | None = None
    details: Mapping[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Writes:
    """Everything one agent's part of a decided batch will write, collected before the first
    statement: new rows, changes to stored facts (by id) and events."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    supersede: list[tuple[uuid.UUID, uuid.UUID]] = field(default_factory=list)  # (old, new)
    contradict: list[tuple[uuid.UUID, uuid.UUID]] = field(default_factory=list)  # (old, new)
    reinforce: Counter[uuid.UUID] = field(default_factory=Counter)
    derived: dict[uuid.UUID, list[uuid.UUID]] = field(default_factory=dict)
    events: list[FactEvent] = field(default_factory=list)
    # Pending facts given their vector (the embedding queue), and those merged into another.
    embed: dict[uuid.UUID, Vector] = field(default_factory=dict)
    merge: dict[uuid.UUID, uuid.UUID] = field(default_factory=dict)


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


# -- a batch of new facts (learn_many) ----------------------------------------------------


@dataclass(slots=True)
class Decided:
    """One item's decision, kept until the writes are done and the outcome can be built."""

    plan: LearnPlan | None  # None: rejected by the admission gate
    row: dict[str, Any] | None  # the new (or rejected) row, if one was written


def _new_row(p: Prepared, status: FactStatus, at: datetime, created: datetime) -> dict[str, Any]:
    inp = p.input
    return {
        "agent_id": inp.agent_id, "id": uuid.uuid4(), "subject": inp.subject,
        "subject_key": p.subject_key if status is not FactStatus.REJECTED else None,
        "content": inp.content, "category": inp.category, "confidence": p.confidence,
        "status": status.value, "explicit": inp.explicit, "embedding": p.vector,
        "superseded_by": None, "merged_into": None, "contradicts": [],
        "derived_from": list(inp.derived_from), "evidence_count": 1, "last_evidence_at": at,
        "valid_from": at, "valid_to": None, "metadata": dict(inp.metadata),
        "created_at": created, "updated_at": at,
    }  # fmt: skip


def decide_new(
    index: int, p: Prepared, at: datetime, state: AgentState, writes: Writes, t: RelationThresholds
) -> Decided:
    """Decide the ``index``-th item of a batch against its candidates (``state``)."""
    # Distinct, ordered creation instants: later facts of a batch sort as newer in history.
    created = at + timedelta(microseconds=index)
    if not p.admission.admitted:
        row = _new_row(p, FactStatus.REJECTED, at, created)
        writes.rows.append(row)
        writes.events.append(FactEvent(row["id"], EventKind.REJECTED, at, p.admission.reason.value))
        return Decided(plan=None, row=row)
    plan = plan_learn(NewFact(p.features, p.subject_key), state.candidates(index, p), t)
    if plan.action is LearnAction.REINFORCED:
        assert plan.reinforce is not None
        _reinforce(plan.reinforce, p, at, plan, state, writes)
        return Decided(plan=plan, row=None)
    status = FactStatus.ACTIVE if p.vector is not None else FactStatus.PENDING_EMBED
    row = _new_row(p, status, at, created)
    new_id: uuid.UUID = row["id"]
    writes.rows.append(row)
    details = {"action": plan.action.value, "pending": p.vector is None}
    writes.events.append(
        FactEvent(new_id, EventKind.LEARNED, at, plan.reason, plan.similarity, details=details)
    )
    for old in plan.supersede:
        _retire(old.id, new_id, at, state, writes)
        writes.events.append(
            FactEvent(old.id, EventKind.SUPERSEDED, at, old.reason, old.similarity, new_id)
        )
    for old in plan.contradicts:
        row["contradicts"].append(old.id)
        _link(old.id, new_id, state, writes)
        for a, b in ((new_id, old.id), (old.id, new_id)):
            writes.events.append(
                FactEvent(a, EventKind.CONTRADICTION, at, old.reason, old.similarity, b)
            )
    state.add_new(Known(new_id, p.input.content, p.subject_key, at, p.vector, row))
    return Decided(plan=plan, row=row)


def _retire(
    old_id: uuid.UUID, new_id: uuid.UUID, at: datetime, state: AgentState, writes: Writes
) -> None:
    known = state.known.get(old_id)
    if known is not None and known.row is not None:
        # Created earlier in this batch: written already superseded.
        known.row.update(
            status=FactStatus.SUPERSEDED.value, superseded_by=new_id, valid_to=at, updated_at=at
        )
    else:
        writes.supersede.append((old_id, new_id))
    state.retire(old_id)


def _link(old_id: uuid.UUID, new_id: uuid.UUID, state: AgentState, writes: Writes) -> None:
    known = state.known.get(old_id)
    if known is not None and known.row is not None:
        known.row["contradicts"].append(new_id)
    else:
        writes.contradict.append((old_id, new_id))


def _reinforce(
    target: uuid.UUID, p: Prepared, at: datetime, plan: LearnPlan, state: AgentState, writes: Writes
) -> None:
    known = state.known[target]
    if known.row is not None:
        row = known.row
        row["evidence_count"] += 1
        row["confidence"] = reinforced(row["confidence"])
        row["last_evidence_at"] = row["updated_at"] = at
        row["derived_from"].extend(p.input.derived_from)
    else:
        writes.reinforce[target] += 1
        writes.derived.setdefault(target, []).extend(p.input.derived_from)
    writes.events.append(
        FactEvent(target, EventKind.REINFORCED, at, plan.reason, plan.similarity,
                  details={"content": p.input.content})
    )  # fmt: skip


def row_fact(row: Mapping[Any, Any]) -> Fact:
    """The fact a row (as written, or as read) holds."""
    return Fact.model_validate({name: row[name] for name in Fact.model_fields})


def outcome(
    p: Prepared, d: Decided, state: AgentState, refreshed: Mapping[uuid.UUID, Fact]
) -> LearnOutcome:
    """What learning ``p`` did, once the batch is written (``refreshed``: the reinforced
    stored facts as they are now)."""
    if d.plan is None:
        assert d.row is not None
        return LearnOutcome(
            action=LearnAction.REJECTED, fact=row_fact(d.row), reason=p.admission.reason.value
        )
    plan = d.plan
    if plan.reinforce is not None:
        reinforced_fact = refreshed.get(plan.reinforce)
        fact = reinforced_fact or row_fact(state.rows[plan.reinforce])
    else:
        assert d.row is not None
        fact = row_fact(d.row)
    return LearnOutcome(
        action=plan.action,
        fact=fact,
        superseded=tuple(r.id for r in plan.supersede),
        contradicts=tuple(r.id for r in plan.contradicts),
        reason=plan.reason,
        pending_embedding=d.row is not None and p.vector is None,
        similarity=plan.similarity,
    )


# -- pending facts getting their vectors (the embedding queue) -----------------------------


class PendingReport(OutputModel):
    """What one ``embed_pending`` pass did."""

    embedded: int = 0  # became active
    merged: int = 0  # duplicates of a current fact: merged into it (which was reinforced)
    superseded: int = 0  # older facts retired by the newly embedded ones (or the reverse)
    contradictions: int = 0

    def __add__(self, other: PendingReport) -> PendingReport:
        return PendingReport(
            embedded=self.embedded + other.embedded,
            merged=self.merged + other.merged,
            superseded=self.superseded + other.superseded,
            contradictions=self.contradictions + other.contradictions,
        )


def decide_pending(
    index: int, item: Waiting, state: AgentState, writes: Writes, at: datetime,
    t: RelationThresholds,
) -> PendingReport:  # fmt: skip
    """Settle the ``index``-th pending fact of a pass against the facts current when it
    arrived and after (the pass's earlier ones included)."""
    fact, mine = item.fact, item.features
    candidates = state.candidates(index, item)
    writes.embed[fact.id] = item.vector
    # A newer fact that restates or updates this one already holds the current value.
    newer = [c for c in candidates if c.valid_from > fact.valid_from]
    for cand in sorted(newer, key=lambda c: c.valid_from, reverse=True):
        verdict = classify_pair(mine, cand.features, cand.similarity or 0.0, t)
        if verdict.relation in (PairRelation.UPDATE, PairRelation.DUPLICATE):
            writes.supersede.append((fact.id, cand.id))
            writes.events += [
                FactEvent(fact.id, EventKind.EMBEDDED, at, "embedded"),
                FactEvent(fact.id, EventKind.SUPERSEDED, at, f"newer fact: {verdict.reason}",
                          related_id=cand.id),
            ]  # fmt: skip
            return PendingReport(superseded=1)
    older = [c for c in candidates if c.valid_from <= fact.valid_from]
    plan = plan_learn(NewFact(mine, fact.subject_key), older, t)
    if plan.action is LearnAction.REINFORCED and plan.reinforce is not None:
        writes.merge[fact.id] = plan.reinforce
        writes.reinforce[plan.reinforce] += fact.evidence_count
        writes.derived.setdefault(plan.reinforce, []).extend(fact.derived_from)
        writes.events.append(
            FactEvent(fact.id, EventKind.MERGED, at, plan.reason, related_id=plan.reinforce)
        )
        return PendingReport(merged=1)
    writes.events.append(FactEvent(fact.id, EventKind.EMBEDDED, at, plan.reason))
    for old in plan.supersede:
        writes.supersede.append((old.id, fact.id))
        state.retire(old.id)
        writes.events.append(
            FactEvent(old.id, EventKind.SUPERSEDED, at, old.reason, old.similarity, fact.id)
        )
    for old in plan.contradicts:
        writes.contradict += [(old.id, fact.id), (fact.id, old.id)]  # linked both ways
        writes.events.append(
            FactEvent(fact.id, EventKind.CONTRADICTION, at, old.reason, related_id=old.id)
        )
    state.add_new(Known(fact.id, fact.content, fact.subject_key, fact.valid_from, item.vector))
    return PendingReport(
        embedded=1, superseded=len(plan.supersede), contradictions=len(plan.contradicts)
    )
