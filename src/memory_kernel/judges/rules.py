"""``RuleJudge``: the default judge, deterministic and without an LLM.

Admission follows the seed's four scenarios, checked in this order over the candidates
(most similar first), so the strongest reason wins:

1. NOT — a candidate is near-identical (very high similarity, or nearly the same words for
   the same task), has the same outcome, and the new run brings no new reference/artifact;
2. REPLACE — same task, the candidate failed and the new run succeeded;
3. MERGE — same task, both succeeded, and they differ (references, artifacts or approach);
4. otherwise ADD.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from memory_kernel.config import HeartConfig
from memory_kernel.errors import JudgeError
from memory_kernel.judges.base import (
    AdmissionCandidate,
    AdmissionRequest,
    AdmissionRun,
    AdmissionVerdict,
)
from memory_kernel.models.episodes import AdmissionDecision
from memory_kernel.similarity import text_overlap, words

__all__ = ["AdmissionRules", "OutcomeClass", "RuleJudge", "classify_outcome", "decide_admission"]

_SUCCESS = frozenset({"success", "successful", "succeeded", "ok", "done", "passed", "pass"})
_FAILURE = frozenset({"failure", "failed", "fail", "error", "errored", "crashed", "aborted"})
_PARTIAL = frozenset({"partial", "partially", "incomplete"})
_NEGATIONS = frozenset({"not", "no", "unsuccessful", "never"})


class OutcomeClass(StrEnum):
    SUCCESS = "success"
    FAILURE = "failure"
    PARTIAL = "partial"
    UNKNOWN = "unknown"


def classify_outcome(outcome: str | None) -> OutcomeClass:
    """The class of a free-text outcome: "success", "Failed: timeout", "partial"...

    Looks at the words, so "failed to deploy" is a failure; a negation ("not successful")
    makes a success word a failure.
    """
    tokens = words(outcome or "")
    if tokens & _PARTIAL:
        return OutcomeClass.PARTIAL
    if tokens & _FAILURE:
        return OutcomeClass.FAILURE
    if tokens & _SUCCESS:
        return OutcomeClass.FAILURE if tokens & _NEGATIONS else OutcomeClass.SUCCESS
    return OutcomeClass.UNKNOWN


@dataclass(frozen=True, slots=True)
class AdmissionRules:
    """The thresholds of the rule decisions (see ``HeartConfig`` for why these values)."""

    not_similarity: float = 0.95
    not_overlap: float = 0.9
    same_task_similarity: float = 0.85

    @classmethod
    def from_config(cls, heart: HeartConfig) -> AdmissionRules:
        return cls(
            not_similarity=heart.admission_not_similarity,
            not_overlap=heart.admission_not_overlap,
            same_task_similarity=heart.admission_same_task_similarity,
        )


def _same_outcome(a: str | None, b: str | None) -> bool:
    ca, cb = classify_outcome(a), classify_outcome(b)
    if ca is OutcomeClass.UNKNOWN or cb is OutcomeClass.UNKNOWN:
        # Free text we cannot classify: only the same words count as the same outcome.
        return " ".join((a or "").casefold().split()) == " ".join((b or "").casefold().split())
    return ca is cb


def _same_task(run: AdmissionRun, cand: AdmissionCandidate, rules: AdmissionRules) -> bool:
    return cand.similarity >= rules.same_task_similarity


def _near_identical(run: AdmissionRun, cand: AdmissionCandidate, rules: AdmissionRules) -> bool:
    if cand.similarity >= rules.not_similarity:
        return True
    # Word overlap over the smaller set is 1.0 when one summary contains the other, so it
    # only counts for runs that are also the same task by embedding.
    return (
        _same_task(run, cand, rules)
        and text_overlap(run.summary, cand.summary) >= rules.not_overlap
    )


def _brings_nothing_new(run: AdmissionRun, cand: AdmissionCandidate) -> bool:
    return set(run.references) <= set(cand.references) and set(run.artifacts) <= set(cand.artifacts)


def _differs(run: AdmissionRun, cand: AdmissionCandidate) -> str:
    if set(run.references) != set(cand.references):
        return "different references"
    if set(run.artifacts) != set(cand.artifacts):
        return "different artifacts"
    return "a different approach"


def _not(run: AdmissionRun, cand: AdmissionCandidate, rules: AdmissionRules) -> bool:
    return (
        _near_identical(run, cand, rules)
        and _same_outcome(run.outcome, cand.outcome)
        and _brings_nothing_new(run, cand)
    )


def _replace(run: AdmissionRun, cand: AdmissionCandidate, rules: AdmissionRules) -> bool:
    return (
        _same_task(run, cand, rules)
        and classify_outcome(cand.outcome) is OutcomeClass.FAILURE
        and classify_outcome(run.outcome) is OutcomeClass.SUCCESS
    )


def _merge(run: AdmissionRun, cand: AdmissionCandidate, rules: AdmissionRules) -> bool:
    both = classify_outcome(run.outcome) is classify_outcome(cand.outcome) is OutcomeClass.SUCCESS
    return _same_task(run, cand, rules) and both


def decide_admission(request: AdmissionRequest, rules: AdmissionRules) -> AdmissionVerdict:
    """The rule verdict for one request (pure)."""
    run, cands = request.run, request.candidates
    for cand in cands:
        if _not(run, cand, rules):
            return _verdict(
                AdmissionDecision.NOT,
                cand,
                f"near-identical to an admitted run (similarity {cand.similarity:.2f}) with the "
                "same outcome and no new references or artifacts",
            )
    for cand in cands:
        if _replace(run, cand, rules):
            return _verdict(
                AdmissionDecision.REPLACE,
                cand,
                f"same task (similarity {cand.similarity:.2f}): the new run succeeded where "
                "the old one failed",
            )
    for cand in cands:
        if _merge(run, cand, rules):
            return _verdict(
                AdmissionDecision.MERGE,
                cand,
                f"same task (similarity {cand.similarity:.2f}), both succeeded with "
                f"{_differs(run, cand)}: complementary",
            )
    best = f" (best similarity {cands[0].similarity:.2f})" if cands else ""
    return AdmissionVerdict(
        decision=AdmissionDecision.ADD,
        reason=f"similar runs exist{best} but none is redundant, worse or complementary",
    )


def _verdict(
    decision: AdmissionDecision, cand: AdmissionCandidate, reason: str
) -> AdmissionVerdict:
    return AdmissionVerdict(decision=decision, target_run_id=cand.id, reason=reason)


class RuleJudge:
    """The judge used when none is configured, and the fallback of every other judge."""

    def __init__(self, rules: AdmissionRules | None = None) -> None:
        self.rules = rules or AdmissionRules()

    @property
    def name(self) -> str:
        return "rules"

    async def admit(
        self, requests: Sequence[AdmissionRequest]
    ) -> Sequence[AdmissionVerdict | JudgeError]:
        return [decide_admission(request, self.rules) for request in requests]
