"""Admission control, the pure part: pre-filter, judge-answer checking, and the plan.

The service loads rows and calls these; nothing here touches the database, so every
branch is tested without one.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pydantic

from memory_kernel.judges.base import AdmissionRequest, AdmissionVerdict
from memory_kernel.judges.rules import AdmissionRules, OutcomeClass, classify_outcome
from memory_kernel.judges.rules import decide_admission as rule_verdict
from memory_kernel.models.enums import AdmissionStatus, DecidedBy, EventKind
from memory_kernel.models.episodes import AdmissionDecision, Episode

__all__ = [
    "AdmissionPlan",
    "Decision",
    "JudgeAnswer",
    "check_answer",
    "decide",
    "plan_admission",
    "prefilter",
]

NO_EMBEDDING = "no embedding: the summary is empty or the embedder failed, so it cannot be compared"

EVENT_OF: dict[AdmissionDecision, EventKind] = {
    AdmissionDecision.ADD: EventKind.ADMISSION_ADD,
    AdmissionDecision.NOT: EventKind.ADMISSION_NOT,
    AdmissionDecision.REPLACE: EventKind.ADMISSION_REPLACE,
    AdmissionDecision.MERGE: EventKind.ADMISSION_MERGE,
}


@dataclass(frozen=True, slots=True)
class JudgeAnswer:
    """What the judge said for one request (an answer, or why there is none)."""

    judge: str
    candidate_ids: tuple[uuid.UUID, ...]
    answer: object = None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Decision:
    verdict: AdmissionVerdict
    decided_by: DecidedBy
    stage: str  # "prefilter", "judge" or "rules"
    similarity: float | None
    judge_error: str | None = None


def prefilter(request: AdmissionRequest, *, threshold: float) -> AdmissionVerdict | None:
    """The cheap deterministic stage: ADD when nothing similar enough exists, else ``None``
    (the judge decides)."""
    if not request.candidates:
        return AdmissionVerdict(decision=AdmissionDecision.ADD, reason="no similar admitted run")
    best = max(c.similarity for c in request.candidates)
    if best < threshold:
        return AdmissionVerdict(
            decision=AdmissionDecision.ADD,
            reason=f"best similarity {best:.2f} is below the threshold {threshold:.2f}",
        )
    return None


def check_answer(answer: object, request: AdmissionRequest) -> AdmissionVerdict:
    """The judge's answer as a verdict, or ``ValueError`` saying why it cannot be used."""
    if isinstance(answer, BaseException):
        raise ValueError(f"the judge failed: {answer}")
    try:
        verdict = AdmissionVerdict.model_validate(answer)
    except pydantic.ValidationError as exc:
        raise ValueError(
            f"invalid answer: {exc.error_count()} error(s), first: {exc.errors()[0]['msg']}"
        ) from exc
    known = {c.id for c in request.candidates}
    if verdict.target_run_id is not None and verdict.target_run_id not in known:
        raise ValueError(f"target {verdict.target_run_id} is not one of the candidates")
    return verdict


def decide(
    request: AdmissionRequest,
    *,
    threshold: float,
    rules: AdmissionRules,
    embedded: bool,
    answer: JudgeAnswer | None,
) -> Decision:
    """Pre-filter, then the judge's answer when it is usable, else the rules."""
    if not embedded:
        verdict = AdmissionVerdict(decision=AdmissionDecision.ADD, reason=NO_EMBEDDING)
        return Decision(verdict, DecidedBy.RULE, "prefilter", None)
    early = prefilter(request, threshold=threshold)
    if early is not None:
        return Decision(early, DecidedBy.RULE, "prefilter", _similarity(request, None))
    error = None
    if answer is not None:
        error = answer.error
        if error is None and answer.candidate_ids != tuple(c.id for c in request.candidates):
            error = "the candidates changed while the judge was deciding"
        if error is None:
            try:
                verdict = check_answer(answer.answer, request)
            except ValueError as exc:
                error = str(exc)
            else:
                sim = _similarity(request, verdict.target_run_id)
                return Decision(verdict, DecidedBy.JUDGE, "judge", sim)
        error = f"judge {answer.judge!r}: {error}; the rules decided"
    verdict = rule_verdict(request, rules)
    return Decision(
        verdict, DecidedBy.RULE, "rules", _similarity(request, verdict.target_run_id), error
    )


def _similarity(request: AdmissionRequest, target: uuid.UUID | None) -> float | None:
    for cand in request.candidates:
        if target is None or cand.id == target:
            return cand.similarity  # candidates are most-similar first
    return None


@dataclass(frozen=True, slots=True)
class AdmissionPlan:
    """The writes a decision needs. ``repoint`` moves a merge group to a new canonical."""

    new_values: Mapping[str, Any]
    target_id: uuid.UUID | None = None
    target_values: Mapping[str, Any] = field(default_factory=dict)
    target_event: EventKind | None = None
    repoint: tuple[uuid.UUID, uuid.UUID] | None = None  # (old canonical, new canonical)


_OUTCOME_RANK = {
    OutcomeClass.SUCCESS: 2,
    OutcomeClass.PARTIAL: 1,
    OutcomeClass.UNKNOWN: 1,
    OutcomeClass.FAILURE: 0,
}


def _rank(episode: Episode) -> tuple[int, datetime]:
    # Success beats failure; among equals the newer run wins (the seed's canonical rule).
    when = episode.ended_at or episode.started_at
    return _OUTCOME_RANK[classify_outcome(episode.outcome)], when


def _union(first: tuple[str, ...], second: tuple[str, ...]) -> list[str]:
    return list(dict.fromkeys(first + second))


def plan_admission(
    new: Episode, verdict: AdmissionVerdict, target: Episode | None, now: datetime
) -> AdmissionPlan:
    """What to write for ``verdict``. For MERGE, ``target`` is the head of its merge group."""
    decision = verdict.decision
    if decision is AdmissionDecision.NOT:
        return AdmissionPlan({"admission": AdmissionStatus.NOT_ADMITTED.value})
    if decision is AdmissionDecision.ADD or target is None:
        # A REPLACE/MERGE whose target vanished cannot act on it; the run is still new.
        return AdmissionPlan({"admission": AdmissionStatus.ACTIVE.value})
    if decision is AdmissionDecision.REPLACE:
        return AdmissionPlan(
            {"admission": AdmissionStatus.ACTIVE.value},
            target_id=target.id,
            target_values={
                "admission": AdmissionStatus.SUPERSEDED.value,
                "superseded_by": new.id,
                "updated_at": now,
            },
            target_event=EventKind.SUPERSEDED,
            repoint=(target.id, new.id) if target.canonical else None,
        )
    return _plan_merge(new, target, now)


def _plan_merge(new: Episode, head: Episode, now: datetime) -> AdmissionPlan:
    new_is_winner = _rank(new) >= _rank(head)
    winner = new if new_is_winner else head
    aggregate = {
        "canonical": True,
        "canonical_id": None,
        # The head's counter already holds its group's total, so the sum does not double.
        "usage_count": new.usage_count + head.usage_count,
        "references": _union(head.references, new.references),
        "artifacts": _union(head.artifacts, new.artifacts),
    }
    demoted = {"canonical": False, "canonical_id": winner.id}
    return AdmissionPlan(
        {"admission": AdmissionStatus.ACTIVE.value, **(aggregate if new_is_winner else demoted)},
        target_id=head.id,
        target_values={**(demoted if new_is_winner else aggregate), "updated_at": now},
        target_event=EventKind.MERGED,
        repoint=(head.id, new.id) if new_is_winner else None,
    )
