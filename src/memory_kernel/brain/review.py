"""A judge's second reading of layer 1's uncertain band (pure: the marks, the question, the
answer and what it changes).

Layer 1's classifier gives a deliberating response a probability of being a decision. Near
its threshold it errs on what words cannot tell: a choice made without a verb of choosing
("Monorepo it is."), a choice left open in the words of choosing ("two reasonable paths: …").
``post_turn`` keeps the probability on the deliberation (``metadata["gate"]``, :func:`mark`).
With a judge, the nightly ``consolidate`` asks it about those whose probability lies in
``ConsolidationConfig.judge_decision_band``, once each (``consolidation/gate_phase.py``):

- a decision layer 1 recorded that the judge finds none in is rejected at layer ``judge``
  (kept, with the judge's reason, as every reject);
- a response layer 1 rejected that the judge finds a decision in is drafted and finished
  through layers 3 and 2 like any deliberation, so the quality gate and the session's
  dedup still apply.

A judge that agrees changes nothing but the mark; one that fails is asked again next run.

The band has no structural rail (the fact questions have theirs: a winner among the facts
asked about, no merge across a changed value), and a judge that leans to "yes" trades
misses for noise. So the run also asks :data:`GATE_CHECKS`, responses whose answer is not in
doubt; a judge that gets one wrong, or leaves one unanswered, has none of its answers
applied in that run (``consolidation.judging.Check``).
"""

from __future__ import annotations

import json
import uuid
from enum import StrEnum
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict, field_validator

__all__ = [
    "GATE_CHECKS",
    "GATE_KEY",
    "GATE_REVIEW_SYSTEM_PROMPT",
    "Change",
    "GateCheck",
    "GateReviewRequest",
    "GateReviewVerdict",
    "change",
    "check_requests",
    "gate_review_prompt",
    "mark",
    "reviewed",
]

#: The key of a deliberation's metadata that holds layer 1's reading and the judge's.
GATE_KEY = "gate"
_MAX_REASON_CHARS = 1000
# A judge reads the head of a long response: its choice, if any, is stated early.
_MAX_PROMPT_CHARS = 8000


class Change(StrEnum):
    REJECT = "reject"  # recorded, and the judge finds no decision in it
    RESTORE = "restore"  # rejected by layer 1, and the judge finds a decision in it


def mark(probability: float | None, *, passed: bool) -> dict[str, Any] | None:
    """What a deliberation keeps of layer 1 (``None``: a rule decided, no probability)."""
    return None if probability is None else {"p": probability, "passed": passed}


class GateReviewRequest(BaseModel):
    """Is ``response`` (the agent's answer to ``message``) a decision?"""

    model_config = ConfigDict(frozen=True, extra="forbid")

    decision_id: uuid.UUID
    agent_id: str
    message: str
    response: str
    #: Whether the decision is recorded now (layer 1 passed it).
    recorded: bool
    #: ``metadata["gate"]`` as stored (layer 1's probability), which the answer joins.
    gate: dict[str, Any]


class GateReviewVerdict(BaseModel):
    """``{"is_decision": true|false, "reason": "..."}``; extra keys are ignored."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    is_decision: bool
    reason: str = "(no reason given)"

    @field_validator("reason")
    @classmethod
    def _short(cls, value: str) -> str:
        # Kept as a rejection reason and in the audit trail: an essay is cut, not refused.
        return value.strip()[:_MAX_REASON_CHARS] or "(no reason given)"


GATE_REVIEW_SYSTEM_PROMPT = """\
You review an AI agent's answers for its long-term record of decisions. You see what the
user said and what the agent answered. Decide whether the answer makes or records a
decision: a choice made between options, a commitment to a course of action, a plan or a
setting chosen (with or without its reason). Not a decision: a status report or progress
update, an offer or a question back, information or an explanation, a summary of options
that leaves the choice open, agreement to whatever the user picks, a greeting or thanks.
Answer with one JSON object and nothing else:
{"is_decision": true or false, "reason": "<short>"}"""


def _head(text: str) -> str:
    return text if len(text) <= _MAX_PROMPT_CHARS else text[:_MAX_PROMPT_CHARS] + "…"


def gate_review_prompt(request: GateReviewRequest) -> str:
    """The user message for one request (JSON, so the texts cannot break it)."""
    payload = {"user_said": _head(request.message), "agent_answered": _head(request.response)}
    return json.dumps(payload, ensure_ascii=False, indent=1)


def change(request: GateReviewRequest, verdict: GateReviewVerdict) -> Change | None:
    """What the judge's answer changes (``None``: it agrees with layer 1)."""
    if request.recorded and not verdict.is_decision:
        return Change.REJECT
    if not request.recorded and verdict.is_decision:
        return Change.RESTORE
    return None


def reviewed(request: GateReviewRequest, verdict: GateReviewVerdict, judge: str) -> dict[str, Any]:
    """The deliberation's gate mark with the judge's answer: it is not asked again."""
    answer = {"by": judge, "is_decision": verdict.is_decision, "reason": verdict.reason}
    return {**request.gate, "judge": answer}


class GateCheck(NamedTuple):
    message: str
    response: str
    is_decision: bool


#: Exchanges whose answer is not in doubt, asked beside the band at every run: a judge that
#: gets one wrong (one that calls a status report a decision, as a small base model did) is
#: not trusted with the band (docs/tuning.md, twenty-fifth round).
GATE_CHECKS = (
    GateCheck(
        "Should the billing service store invoices in Postgres or MySQL?",
        "Let's go with Postgres: the invoice payloads need JSONB and the team already runs "
        "it. I'll set up the schema today.",
        True,
    ),
    GateCheck("Status?", "Done! ✅ All 42 tests pass and the branch is pushed.", False),
    GateCheck(
        "The nightly export keeps timing out. What now?",
        "I'm moving the export from the single cron job to a queue with five workers, so no "
        "run holds the lock for the whole export.",
        True,
    ),
    GateCheck(
        "Which laptop should I get?",
        "There are two reasonable options: the 14-inch is lighter, the 16-inch has the "
        "better battery. How often do you travel with it?",
        False,
    ),
)
_CHECKS = uuid.UUID("5b0d7f0e-5c1e-4d4e-9a55-6a7c1d0c2e11")


def check_requests(agent_id: str) -> list[tuple[GateReviewRequest, bool]]:
    """:data:`GATE_CHECKS` as questions (ids no deliberation has; nothing is written), each
    with its answer (``is_decision``)."""
    return [
        (
            GateReviewRequest(
                decision_id=uuid.uuid5(_CHECKS, c.response),
                agent_id=agent_id,
                message=c.message,
                response=c.response,
                recorded=not c.is_decision,
                gate={},
            ),
            c.is_decision,
        )
        for c in GATE_CHECKS
    ]
