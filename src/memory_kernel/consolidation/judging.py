"""The judge's part in consolidation: ambiguous conflicts and merges, one batched call each.

The kernel's ``Judge`` protocol (``judges/base.py``) only asks admission questions.
Consolidation asks each kind of question (a :class:`Question`: the facts' conflicts and
merges, layer 1's uncertain band) through, in order of preference:

1. the judge's own method for the kind of question (``judge.resolve(requests)`` for facts,
   :class:`ConflictJudge`; ``judge.review_decisions(requests)`` for layer 1's band);
2. ``judge.complete_json(system, prompts, schema)`` — ``ChatJudge``'s generic batched call;
3. nothing: without either (``RuleJudge``, no judge) the rules decide ("keep both").

Whatever comes back is validated (:func:`validate`): the winner must be one of the facts
asked about, and a merge across a changed value or a flipped meaning is refused (the facts
policy's "a changed value is never merged"). An invalid, missing or failed answer falls
back to the rule decision, and the run records that it did.

Those rails check an answer against its question; they cannot tell a judge that answers
"supersede" (or "a decision") to everything. So each batch may open with :class:`Check`
questions whose answer is not in doubt (``consolidation/checks.py``,
``brain.review.GATE_CHECKS``): a judge that answers one wrongly or not at all has none of
its answers in that batch applied (``ConsolidationConfig.judge_checks``).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any, Generic, Protocol, Self, TypeVar, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from memory_kernel.errors import JudgeError

__all__ = [
    "CONFLICTS",
    "CONSOLIDATION_SYSTEM_PROMPT",
    "GROUP",
    "Check",
    "ConflictFact",
    "ConflictJudge",
    "ConflictKind",
    "ConflictRequest",
    "ConflictVerdict",
    "JudgeAnswers",
    "Question",
    "Resolution",
    "ask",
    "ask_judge",
    "can_ask",
    "can_judge",
    "conflict_prompt",
]

R = TypeVar("R")
V = TypeVar("V", bound=BaseModel)
#: Prompts per ``complete_json`` call (twice ChatJudge's default concurrency).
GROUP = 8
_MAX_REASON_CHARS = 1000
_MAX_CONTENT_CHARS = 64 * 1024


class ConflictKind(StrEnum):
    CONFLICT = "conflict"  # a possible contradiction or a changed value
    MERGE = "merge"  # possible duplicates


class Resolution(StrEnum):
    SUPERSEDE = "supersede"  # the winner holds the current truth; the others are retired
    MERGE = "merge"  # the same fact: the others are merged into the winner
    KEEP_BOTH = "keep_both"  # both are valid (different contexts); nothing changes
    CONTRADICTION = "contradiction"  # they contradict: both confidences halved, flagged


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ConflictFact(_Frozen):
    id: uuid.UUID
    content: str
    category: str | None
    confidence: float
    #: When the fact became true (``valid_from``): which of a changed value's statements is
    #: the newer one, which no text says.
    stated_at: datetime | None = None


class ConflictRequest(_Frozen):
    """Decide between ``facts`` (two for a conflict, two or more for a merge cluster)."""

    agent_id: str
    kind: ConflictKind
    facts: tuple[ConflictFact, ...]
    similarity: float  # cosine of the pair (the weakest edge of a cluster)
    rule_reason: str  # why the rules found the case ambiguous


class ConflictVerdict(BaseModel):
    """``{"decision": "supersede|merge|keep_both|contradiction", "winner_id": "...",
    "merged_content": "... or null", "reason": "..."}``. SUPERSEDE needs a winner; MERGE
    without one keeps the most confident fact. Extra keys an LLM adds are ignored."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    decision: Resolution
    winner_id: uuid.UUID | None = None
    merged_content: str | None = Field(default=None, max_length=_MAX_CONTENT_CHARS)
    reason: str = "(no reason given)"

    @field_validator("decision", mode="before")
    @classmethod
    def _lower(cls, value: object) -> object:
        if isinstance(value, str):
            return value.strip().lower().replace(" ", "_").replace("-", "_")
        return value

    @field_validator("reason")
    @classmethod
    def _short(cls, value: str) -> str:
        return value.strip()[:_MAX_REASON_CHARS] or "(no reason given)"

    @field_validator("merged_content")
    @classmethod
    def _content(cls, value: str | None) -> str | None:
        if value is None or not value.strip() or "\x00" in value:
            return None
        return value.strip()

    @model_validator(mode="after")
    def _winner(self) -> Self:
        if self.decision is Resolution.SUPERSEDE and self.winner_id is None:
            raise ValueError("supersede needs a winner_id")
        return self


@runtime_checkable
class ConflictJudge(Protocol):
    """A judge that answers consolidation questions: one verdict (or ``JudgeError``) per
    request, in order; raising fails the whole batch."""

    @property
    def name(self) -> str: ...

    async def resolve(
        self, requests: Sequence[ConflictRequest]
    ) -> Sequence[ConflictVerdict | JudgeError]: ...


CONSOLIDATION_SYSTEM_PROMPT = """\
You maintain an agent's long-term knowledge base of facts. You see two or more stored
facts that look related, with their confidence (0-1) and why the rules could not decide.
Answer with one JSON object and nothing else:
{"decision": "supersede|merge|keep_both|contradiction", "winner_id": "<fact_id or null>",
 "merged_content": "<one sentence or null>", "reason": "<short>"}
- merge: they state the same fact; winner_id is the best-worded one; merged_content may
  give one sentence that combines them (only if nothing is lost), else null.
- supersede: they describe the same thing at different times or with a changed value;
  winner_id is the one that is true now (usually the latest stated_at); the others are
  retired.
- keep_both: both can be true (different contexts or different things).
- contradiction: they cannot both be true and you cannot tell which is right.
winner_id must be one of the fact_ids shown. Never merge facts whose values differ."""


def conflict_prompt(request: ConflictRequest) -> str:
    """The user message for one request (JSON, so fact texts cannot break it)."""
    payload = {
        "question": request.kind.value,
        "similarity": round(request.similarity, 3),
        "why_ambiguous": request.rule_reason,
        "facts": [
            {
                "fact_id": str(f.id),
                "content": f.content,
                "category": f.category,
                "confidence": round(f.confidence, 3),
                **({} if f.stated_at is None else {"stated_at": f.stated_at.isoformat()}),
            }
            for f in request.facts
        ],
    }
    return json.dumps(payload, ensure_ascii=False, indent=1)


@dataclass(frozen=True)
class Question(Generic[R, V]):
    """A kind of question consolidation asks: a judge's own method for it (``method``,
    tried first) or ``complete_json`` with this system prompt, prompt and answer schema."""

    method: str
    system: str
    prompt: Callable[[R], str]
    schema: type[V]


CONFLICTS: Question[ConflictRequest, ConflictVerdict] = Question(
    "resolve", CONSOLIDATION_SYSTEM_PROMPT, conflict_prompt, ConflictVerdict
)


def _parse(answer: object, schema: type[V]) -> V | None:
    if isinstance(answer, schema):
        return answer
    if isinstance(answer, BaseModel):
        answer = answer.model_dump()
    if not isinstance(answer, dict):
        return None
    try:
        return schema.model_validate(answer)
    except ValueError:
        return None


class JudgeAnswers(Generic[V]):
    """What one batched call produced: a parsed verdict or ``None`` (fall back) per request."""

    def __init__(self, verdicts: list[V | None], *, called: bool, error: str = ""):
        self.verdicts = verdicts
        self.called = called
        self.error = error

    @classmethod
    def none(cls, n: int, *, called: bool = False, error: str = "") -> JudgeAnswers[V]:
        return cls([None] * n, called=called, error=error)


def can_ask(judge: object | None, question: Question[Any, Any]) -> bool:
    """Whether ``judge`` can answer ``question`` at all."""
    if judge is None:
        return False
    return callable(getattr(judge, question.method, None)) or callable(
        getattr(judge, "complete_json", None)
    )


def can_judge(judge: object | None) -> bool:
    """Whether ``judge`` can answer consolidation's fact questions at all."""
    return can_ask(judge, CONFLICTS)


async def _raw_answers(
    judge: Any, question: Question[R, V], requests: Sequence[R], deadline: float
) -> tuple[list[object], bool]:
    """The judge's answers, and whether the deadline cut them short. Its own method answers
    the whole batch or nothing; ``complete_json`` is asked :data:`GROUP` prompts at a time,
    so a slow model's answers before the deadline are kept and the rest are asked next run
    (else a batch longer than the deadline would time out at every run)."""
    own = getattr(judge, question.method, None)
    if callable(own):
        async with asyncio.timeout_at(deadline):
            return list(await own(requests)), False
    answers: list[object] = []
    for start in range(0, len(requests), GROUP):
        prompts = [question.prompt(r) for r in requests[start : start + GROUP]]
        try:
            async with asyncio.timeout_at(deadline):
                got = list(await judge.complete_json(question.system, prompts, question.schema))
        except TimeoutError:
            return answers + [None] * (len(requests) - len(answers)), True
        if len(got) != len(prompts):
            raise ValueError(f"judge answered {len(got)} items for {len(prompts)} prompts")
        answers += got
    return answers, False


@dataclass(frozen=True)
class Check(Generic[R, V]):
    """A question whose answer is not in doubt, asked ahead of a batch: ``passes`` tells a
    right answer."""

    request: R
    passes: Callable[[V], bool]


async def ask(
    judge: object | None,
    question: Question[R, V],
    requests: Sequence[R],
    *,
    timeout_s: float,
    checks: Sequence[Check[R, V]] = (),
) -> JudgeAnswers[V]:
    """One batched call within ``timeout_s``; any failure, timeout or garbage becomes ``None``
    slots (``complete_json`` keeps what was answered before the deadline). ``checks`` are
    asked first; one answered wrongly or not at all makes every slot ``None``."""
    if not requests or not can_ask(judge, question):
        return JudgeAnswers.none(len(requests))
    asked = [*(c.request for c in checks), *requests]
    deadline = asyncio.get_running_loop().time() + timeout_s
    try:
        raw, late = await _raw_answers(judge, question, asked, deadline)
    except TimeoutError:
        return JudgeAnswers.none(len(requests), called=True, error="judge timed out")
    except Exception as exc:
        return JudgeAnswers.none(len(requests), called=True, error=f"judge failed: {exc}")
    if len(raw) != len(asked):
        error = f"judge answered {len(raw)} items for {len(asked)} requests"
        return JudgeAnswers.none(len(requests), called=True, error=error)
    verdicts = [None if isinstance(a, BaseException) else _parse(a, question.schema) for a in raw]
    error = f"judge timed out after {sum(v is not None for v in verdicts)} answers" if late else ""
    got, verdicts = verdicts[: len(checks)], verdicts[len(checks) :]
    failed = sum(v is None or not c.passes(v) for c, v in zip(checks, got, strict=True))
    if failed:
        missed = (
            f"the judge answered {failed} of {len(checks)} check questions wrongly or not at "
            "all; none of its answers applied"
        )
        return JudgeAnswers.none(len(requests), called=True, error=error or missed)
    return JudgeAnswers(verdicts, called=True, error=error)


async def ask_judge(
    judge: object | None,
    requests: Sequence[ConflictRequest],
    *,
    timeout_s: float,
    checks: Sequence[Check[ConflictRequest, ConflictVerdict]] = (),
) -> JudgeAnswers[ConflictVerdict]:
    """Consolidation's fact questions (:data:`CONFLICTS`) in one batched call."""
    return await ask(judge, CONFLICTS, requests, timeout_s=timeout_s, checks=checks)
