"""The ``Judge`` protocol and the models it speaks.

A judge decides the ambiguous cases, in batches. Its answers are never trusted: callers
validate each one (pydantic, plus "is the target one of the candidates?") and fall back to
the rule decision — recording that they did — when an answer is missing, invalid, late, or
the judge raised. That is why a slot of a batch may hold a ``JudgeError`` instead of a
verdict: one bad answer does not spoil the others.

Today the protocol has one kind of question, ``admit`` (episode admission); later kinds
(contradictions, merges) are added as further methods, and ``ChatJudge`` answers them all
through one generic batched ``complete_json``.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Protocol, Self, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from memory_kernel.errors import JudgeError
from memory_kernel.models.episodes import AdmissionDecision

__all__ = [
    "AdmissionCandidate",
    "AdmissionRequest",
    "AdmissionRun",
    "AdmissionVerdict",
    "Judge",
]

_MAX_REASON_CHARS = 1000


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class AdmissionRun(_Frozen):
    """A finished run (episode) as a judge sees it."""

    id: uuid.UUID
    summary: str
    outcome: str | None
    references: tuple[str, ...] = ()
    artifacts: tuple[str, ...] = ()
    ended_at: datetime | None = None


class AdmissionCandidate(AdmissionRun):
    """An admitted run similar to the new one; ``similarity`` is 1 - cosine distance."""

    similarity: float


class AdmissionRequest(_Frozen):
    """Should ``run`` enter long-term memory, given the most similar admitted runs?"""

    agent_id: str
    run: AdmissionRun
    #: Most similar first; at most ``HeartConfig.admission_candidates``.
    candidates: tuple[AdmissionCandidate, ...]


class AdmissionVerdict(BaseModel):
    """A judge's answer, in the seed's JSON shape.

    ``{"decision": "ADD|NOT|REPLACE|MERGE", "target_run_id": "...", "reason": "..."}``.
    REPLACE and MERGE need a target; ADD has none (a stray one is dropped). Extra keys an
    LLM adds are ignored; the decision is accepted in any letter case.
    """

    model_config = ConfigDict(frozen=True, extra="ignore")

    decision: AdmissionDecision
    target_run_id: uuid.UUID | None = None
    reason: str = Field(min_length=1)

    @field_validator("decision", mode="before")
    @classmethod
    def _upper(cls, value: object) -> object:
        return value.strip().upper() if isinstance(value, str) else value

    @field_validator("reason")
    @classmethod
    def _short(cls, value: str) -> str:
        # It is stored in the audit trail; an LLM's essay is cut, not refused.
        return value.strip()[:_MAX_REASON_CHARS] or "(no reason given)"

    @model_validator(mode="before")
    @classmethod
    def _drop_add_target(cls, data: object) -> object:
        # An ADD points at nothing; LLMs still fill the field with the closest run.
        if isinstance(data, dict) and str(data.get("decision", "")).strip().upper() == "ADD":
            return {**data, "target_run_id": None}
        return data

    @model_validator(mode="after")
    def _target(self) -> Self:
        needs = self.decision in (AdmissionDecision.REPLACE, AdmissionDecision.MERGE)
        if needs and self.target_run_id is None:
            raise ValueError(f"{self.decision} needs a target_run_id")
        return self


@runtime_checkable
class Judge(Protocol):
    """Decides ambiguous cases in batches; any failure makes callers fall back to rules.

    ``admit`` answers one verdict per request, in order. A slot may hold a ``JudgeError``
    when that one request failed; raising fails the whole batch. Callers bound the call
    with a timeout (``HeartConfig.admission_judge_timeout_s``).
    """

    @property
    def name(self) -> str: ...

    async def admit(
        self, requests: Sequence[AdmissionRequest]
    ) -> Sequence[AdmissionVerdict | JudgeError]: ...
