"""Check questions ahead of each batch of fact questions (``consolidation.checks``): a judge
that answers "supersede" to everything passes every rail of its answers (its winner is one
of the facts asked about) and would retire whatever it is asked about; one wrong check
answer and none of the batch's answers is applied."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import pytest

from memory_kernel import MemoryKernel
from memory_kernel.consolidation.checks import FACT_CHECKS, FactCheck, check_answer
from memory_kernel.consolidation.judging import (
    CONFLICTS,
    Check,
    ConflictFact,
    ConflictKind,
    ConflictRequest,
    ConflictVerdict,
    Resolution,
    ask,
)
from memory_kernel.errors import JudgeError
from memory_kernel.models.consolidation import ConsolidationAction as Action
from memory_kernel.models.enums import FactStatus
from memory_kernel.testing import FakeEmbedder, FrozenClock
from tests.conftest import schema_config
from tests.consolidation.conftest import add_fact, get

A = "agent-a"
LIKES = "Alice likes the new dashboard layout."
DISLIKES = "Alice dislikes the new dashboard layout a lot."
SOLD_OUT = "The bakery sells out of sourdough early."
GONE = "The bakery's sourdough is usually gone by mid-morning."


def _newest(request: ConflictRequest) -> str:
    stated = [f for f in request.facts if f.stated_at is not None]
    return str(max(stated, key=lambda f: f.stated_at or 0).id)


class AnswerJudge:
    """Answers every question with ``answer`` (a winner of "newest" is the fact stated
    last), and the check questions right but for ``wrong``, which it gets wrong; a
    ``blind`` one answers the check questions like any other."""

    name = "answers"

    def __init__(
        self, answer: dict[str, str], wrong: FactCheck | None = None, *, blind: bool = False
    ) -> None:
        self.answer = answer
        self.wrong = wrong
        self.blind = blind
        self.asked: list[ConflictRequest] = []

    async def resolve(self, requests: Sequence[ConflictRequest]) -> list[dict[str, str]]:
        return [self._one(r) for r in requests]

    def _one(self, request: ConflictRequest) -> dict[str, str]:
        right = check_answer(f.id for f in request.facts)
        if right is None or self.blind:
            self.asked += [request] if right is None else []
            answer = dict(self.answer)
        elif self.wrong and {f.content for f in request.facts} == {
            self.wrong.older,
            self.wrong.newer,
        }:
            flipped = "supersede" if self.wrong.answer is Resolution.KEEP_BOTH else "keep_both"
            answer = {"decision": flipped, "winner_id": "newest", "reason": "wrong"}
        else:
            return right
        if answer.get("winner_id") == "newest":
            answer["winner_id"] = _newest(request)
        return answer


def _open(dsn: str, schema: str, clock: FrozenClock, embedder: FakeEmbedder, judge: Any,
          **sections: dict[str, object]) -> Any:  # fmt: skip
    return MemoryKernel.open(
        dsn, config=schema_config(schema, **sections), clock=clock, embedder=embedder,
        judge=judge,
    )  # fmt: skip


SUPERSEDE_ALL = {"decision": "supersede", "winner_id": "newest", "reason": "the newer wins"}


async def test_a_judge_that_supersedes_everything_retires_nothing(
    pg_dsn: str, drop_schema: str, clock: FrozenClock, embedder: FakeEmbedder,
    caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    judge = AnswerJudge(SUPERSEDE_ALL, blind=True)
    async with _open(pg_dsn, drop_schema, clock, embedder, judge) as kernel:
        likes = await add_fact(kernel, A, LIKES)
        clock.advance(minutes=5)
        dislikes = await add_fact(kernel, A, DISLIKES)
        report = await kernel.consolidate(A)
        (run,) = report.agents
        assert run.error is not None and "1 of 2 check questions" in run.error
        assert report.count(Action.JUDGE_FALLBACK) == 1 and report.judge_calls == 1
        for fact in (likes, dislikes):
            assert (await get(kernel, A, fact)).status is FactStatus.ACTIVE
    assert len(judge.asked) == 1  # the question itself, which the run did not apply
    # The operator hears of it: the run is done, with an error, and a warning is logged.
    warned = [r for r in caplog.records if r.name == "memory_kernel.consolidation.runner"]
    assert any("check questions" in r.getMessage() for r in warned)


async def test_without_the_checks_that_judge_retires_what_it_is_asked_about(
    pg_dsn: str, drop_schema: str, clock: FrozenClock, embedder: FakeEmbedder
) -> None:
    judge = AnswerJudge(SUPERSEDE_ALL, blind=True)
    off: dict[str, dict[str, object]] = {"consolidation": {"judge_checks": False}}
    async with _open(pg_dsn, drop_schema, clock, embedder, judge, **off) as kernel:
        likes = await add_fact(kernel, A, LIKES)
        clock.advance(minutes=5)
        await add_fact(kernel, A, DISLIKES)
        report = await kernel.consolidate(A)
        assert report.agents[0].error is None
        assert (await get(kernel, A, likes)).status is FactStatus.SUPERSEDED


@pytest.mark.parametrize("wrong", FACT_CHECKS, ids=lambda c: c.answer.value + "-" + c.kind.value)
async def test_one_wrong_check_answer_and_the_batch_is_not_applied(
    pg_dsn: str, drop_schema: str, clock: FrozenClock, embedder: FakeEmbedder, wrong: FactCheck
) -> None:
    conflict = wrong.kind is ConflictKind.CONFLICT
    answer = (
        {"decision": "contradiction", "reason": "cannot both hold"}
        if conflict
        else {"decision": "merge", "winner_id": "newest", "reason": "the same"}
    )
    judge = AnswerJudge(answer, wrong)
    async with _open(pg_dsn, drop_schema, clock, embedder, judge) as kernel:
        older = await add_fact(kernel, A, LIKES if conflict else SOLD_OUT, confidence=0.8)
        clock.advance(minutes=5)
        newer = await add_fact(kernel, A, DISLIKES if conflict else GONE, confidence=0.6)
        report = await kernel.consolidate(A)
        assert [r.kind for r in judge.asked] == [wrong.kind]
        assert "1 of 2 check questions" in (report.agents[0].error or "")
        assert report.count(Action.CONTRADICTION) == report.count(Action.MERGED) == 0
        for fact in (older, newer):
            found = await get(kernel, A, fact)
            assert found.status is FactStatus.ACTIVE and found.confidence in (0.8, 0.6)
        judge.wrong = None  # the same question next run, to a judge that passes
        again = await kernel.consolidate(A)
        done = Action.CONTRADICTION if conflict else Action.MERGED
        assert again.count(done) == 1 and again.agents[0].error is None


def _request(text: str) -> ConflictRequest:
    facts = tuple(
        ConflictFact(id=uuid.uuid4(), content=f"{text} {n}", category=None, confidence=0.5)
        for n in range(2)
    )
    return ConflictRequest(
        agent_id=A, kind=ConflictKind.CONFLICT, facts=facts, similarity=0.5, rule_reason="t"
    )


class ListJudge:
    name = "list"

    def __init__(self, answers: list[object]) -> None:
        self.answers = answers

    async def resolve(self, requests: Sequence[ConflictRequest]) -> list[object]:
        assert len(requests) == len(self.answers)
        return self.answers


async def test_a_check_left_unanswered_fails_it_and_a_right_one_lets_the_answers_through() -> None:
    def keeps(verdict: ConflictVerdict) -> bool:
        return verdict.decision is Resolution.KEEP_BOTH

    check = Check(_request("check"), keeps)
    asked = [_request("a"), _request("b")]
    keep = {"decision": "keep_both", "reason": "both hold"}
    contradiction = {"decision": "contradiction", "reason": "no"}
    through = await ask(
        ListJudge([keep, contradiction, keep]), CONFLICTS, asked, timeout_s=5, checks=[check]
    )
    assert [v and v.decision for v in through.verdicts] == [
        Resolution.CONTRADICTION, Resolution.KEEP_BOTH,
    ]  # fmt: skip
    assert through.error == ""
    for failed in (JudgeError("lost"), {"decision": "nonsense"}, contradiction):
        held = await ask(
            ListJudge([failed, keep, keep]), CONFLICTS, asked, timeout_s=5, checks=[check]
        )
        assert held.verdicts == [None, None] and held.called
        assert "1 of 1 check questions" in held.error
