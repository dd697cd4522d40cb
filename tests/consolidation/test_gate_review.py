"""A judge reads layer 1's uncertain band again at the nightly run (``brain.review``): a
recorded response it finds no decision in is rejected, a rejected one it finds a decision in
goes through layers 3 and 2; each is asked once, and a failure changes nothing."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

import pytest

from memory_kernel import DecisionInput, MemoryKernel, TurnInput, TurnOutcome
from memory_kernel.brain.review import GATE_REVIEW_SYSTEM_PROMPT, GateReviewRequest
from memory_kernel.brain.scorer import load_scorer
from memory_kernel.config import MemoryKernelConfig
from memory_kernel.judges import ChatJudge
from memory_kernel.models.consolidation import ConsolidationAction as Action
from memory_kernel.models.decisions import Decision
from memory_kernel.testing import FakeEmbedder, FrozenClock
from tests.conftest import schema_config
from tests.consolidation.conftest import events_of
from tests.gate_texts import CLEAR_DECISION, CLEAR_NOISE, DECISION_REJECTED, NOISE_RECORDED
from tests.httpserver import Reply, Request, chat_reply, serve
from tests.judge_checks import CHECKS

A = "agent-a"


class BandJudge:
    """Answers the gate's question from a table of responses (``review_decisions``), and
    the check questions right unless ``checks`` says otherwise; ``requests`` holds the
    band's questions, ``checks_asked`` how many check questions came."""

    name = "band"

    def __init__(
        self, answers: dict[str, bool], *, fail: bool = False, checks: dict[str, bool] = CHECKS
    ) -> None:
        self.answers = answers
        self.fail = fail
        self.checks = checks
        self.requests: list[GateReviewRequest] = []
        self.checks_asked = 0

    async def review_decisions(self, requests: Sequence[GateReviewRequest]) -> list[Any]:
        self.requests.extend(r for r in requests if r.response not in CHECKS)
        self.checks_asked += sum(r.response in CHECKS for r in requests)
        if self.fail:
            raise RuntimeError("model unavailable")
        table = {**self.answers, **self.checks}
        return [{"is_decision": table[r.response], "reason": "read it"} for r in requests]


@pytest.fixture
def open_kernel(
    pg_dsn: str, drop_schema: str, clock: FrozenClock, embedder: FakeEmbedder
) -> Callable[..., Any]:
    """Opens a kernel on the test's schema with ``judge`` and config ``sections``."""

    def make(judge: object | None, **sections: dict[str, object]) -> Any:
        return MemoryKernel.open(
            pg_dsn, config=schema_config(drop_schema, **sections), clock=clock,
            embedder=embedder, judge=judge,  # type: ignore[arg-type]
        )  # fmt: skip

    return make


async def _turn(kernel: MemoryKernel, session: str, response: str) -> uuid.UUID:
    """One deliberating exchange; the id of its deliberation."""
    ctx = await kernel.pre_turn(
        TurnInput(agent_id=A, session_id=session, message="What now?", frame="decision")
    )
    await kernel.post_turn(ctx.turn, TurnOutcome(response_text=response))
    assert ctx.turn.decision_id is not None
    return ctx.turn.decision_id


async def _decision(kernel: MemoryKernel, decision_id: uuid.UUID) -> Decision:
    return await kernel.brain.get(decision_id, agent_id=A)


def test_the_texts_lie_where_the_tests_need_them() -> None:
    scorer = load_scorer(MemoryKernelConfig().brain.decision_classifier)
    p = {t: scorer.probability(t) for t in (NOISE_RECORDED, DECISION_REJECTED)}
    assert 0.5 <= p[NOISE_RECORDED] <= 0.8 and 0.2 <= p[DECISION_REJECTED] < 0.5, p
    assert scorer.probability(CLEAR_DECISION) > 0.8 and scorer.probability(CLEAR_NOISE) < 0.2


async def test_post_turn_keeps_layer_1s_reading_on_the_deliberation(open_kernel: Any) -> None:
    async with open_kernel(None) as kernel:
        recorded = await _decision(kernel, await _turn(kernel, "s1", NOISE_RECORDED))
        rejected = await _decision(kernel, await _turn(kernel, "s2", DECISION_REJECTED))
    assert recorded.active and recorded.metadata["gate"]["passed"] is True
    assert 0.5 <= recorded.metadata["gate"]["p"] <= 0.8
    assert not rejected.active and rejected.metadata["gate"]["passed"] is False
    assert rejected.rejection_reason is not None
    assert rejected.rejection_reason.startswith("informational")


async def test_the_judge_rejects_noise_and_restores_a_decision_in_the_band(
    open_kernel: Any,
) -> None:
    judge = BandJudge({NOISE_RECORDED: False, DECISION_REJECTED: True})
    async with open_kernel(judge) as kernel:
        noise = await _turn(kernel, "s1", NOISE_RECORDED)
        decision = await _turn(kernel, "s2", DECISION_REJECTED)
        clear = [await _turn(kernel, "s3", CLEAR_DECISION), await _turn(kernel, "s4", CLEAR_NOISE)]
        report = await kernel.consolidate(A)
        assert sorted(r.response for r in judge.requests) == sorted(
            [NOISE_RECORDED, DECISION_REJECTED]
        )  # the clear ones are not asked about
        assert report.count(Action.DECISIONS_REVIEWED) == 2 and report.judge_calls == 1
        assert report.agents[0].ambiguous == 2  # counted as the merge phase counts its cases
        assert report.count(Action.DECISIONS_REJECTED) == 1
        assert report.count(Action.DECISIONS_RESTORED) == 1
        dropped, restored = await _decision(kernel, noise), await _decision(kernel, decision)
        assert not dropped.active and dropped.rejection_reason == "judge: read it"
        assert restored.active and restored.finalized and restored.rejection_reason is None
        # Drafted from the response, as post_turn drafts a decision; its confidence set by
        # the quality gate (layer 3), as for any deliberation finalized without one.
        assert restored.description == DECISION_REJECTED and restored.confidence > 0.5
        assert restored.metadata["gate"]["judge"] == {
            "by": "band", "is_decision": True, "reason": "read it",
        }  # fmt: skip
        assert (await _decision(kernel, clear[0])).active
        events = [(e.memory_id, e.event, e.decided_by) for e in await events_of(kernel, A)]
        assert (noise, "rejected", "judge") in events
        assert (decision, "decision_started", "judge") in events
        again = await kernel.consolidate(A)
        assert again.count(Action.DECISIONS_REVIEWED) == 0 and len(judge.requests) == 2
        since = restored.created_at - timedelta(seconds=1)
        recent = await kernel.brain.get_recent_decisions(A, since, limit=10)
        assert decision in {d.id for d in recent} and noise not in {d.id for d in recent}


async def test_a_judge_that_agrees_changes_nothing_but_is_not_asked_again(
    open_kernel: Any,
) -> None:
    judge = BandJudge({NOISE_RECORDED: True, DECISION_REJECTED: False})
    async with open_kernel(judge) as kernel:
        noise = await _turn(kernel, "s1", NOISE_RECORDED)
        decision = await _turn(kernel, "s2", DECISION_REJECTED)
        report = await kernel.consolidate(A)
        assert report.count(Action.DECISIONS_REVIEWED) == 2
        assert report.count(Action.DECISIONS_REJECTED) == 0
        assert report.count(Action.DECISIONS_RESTORED) == 0
        assert (await _decision(kernel, noise)).active
        assert not (await _decision(kernel, decision)).active
        await kernel.consolidate(A)
    assert len(judge.requests) == 2


async def test_a_failing_judge_changes_nothing_and_is_asked_again(open_kernel: Any) -> None:
    judge = BandJudge({}, fail=True)
    async with open_kernel(judge) as kernel:
        noise = await _turn(kernel, "s1", NOISE_RECORDED)
        before = await _decision(kernel, noise)
        report = await kernel.consolidate(A)
        (run,) = report.agents
        assert run.error is not None and "decision review: judge failed" in run.error
        assert report.count(Action.JUDGE_FALLBACK) == 1
        assert await _decision(kernel, noise) == before
        judge.fail, judge.answers = False, {NOISE_RECORDED: False}
        report = await kernel.consolidate(A)
        assert report.count(Action.DECISIONS_REJECTED) == 1


async def test_a_dry_run_counts_the_band_without_asking(open_kernel: Any) -> None:
    judge = BandJudge({NOISE_RECORDED: False})
    async with open_kernel(judge) as kernel:
        noise = await _turn(kernel, "s1", NOISE_RECORDED)
        report = await kernel.consolidate(A, dry_run=True)
        assert report.agents[0].ambiguous == 1 and not judge.requests
        assert (await _decision(kernel, noise)).active


async def test_the_band_is_configurable_and_can_be_off(open_kernel: Any) -> None:
    judge = BandJudge({NOISE_RECORDED: False, DECISION_REJECTED: True})
    off = {"consolidation": {"judge_decision_band": None}}
    async with open_kernel(judge, **off) as kernel:
        await _turn(kernel, "s1", NOISE_RECORDED)
        await kernel.consolidate(A)
    assert not judge.requests
    narrow = {"consolidation": {"judge_decision_band": [0.5, 0.8]}}
    async with open_kernel(judge, **narrow) as kernel:
        await _turn(kernel, "s2", DECISION_REJECTED)  # p below 0.5: outside
        await kernel.consolidate(A)
    assert [r.response for r in judge.requests] == [NOISE_RECORDED]


async def test_a_restored_decision_still_meets_the_sessions_dedup(open_kernel: Any) -> None:
    judge = BandJudge({DECISION_REJECTED: True})
    async with open_kernel(judge) as kernel:
        first = await _turn(kernel, "s1", DECISION_REJECTED)
        # The agent recorded the same decision itself later in the session.
        kept = await kernel.brain.record(
            DecisionInput(agent_id=A, session_id="s1", description=DECISION_REJECTED)
        )
        report = await kernel.consolidate(A)
        assert report.count(Action.DECISIONS_REVIEWED) == 1
        assert report.count(Action.DECISIONS_RESTORED) == 0
        again = await _decision(kernel, first)
        assert not again.active and again.rejection_reason is not None
        assert again.rejection_reason.startswith("duplicate")
        assert (await _decision(kernel, kept.id)).active


async def test_consolidate_all_visits_an_agent_whose_only_work_is_the_band(
    open_kernel: Any,
) -> None:
    judge = BandJudge({NOISE_RECORDED: False})
    async with open_kernel(judge) as kernel:
        noise = await _turn(kernel, "s1", NOISE_RECORDED)
        await kernel.end_session(A, "s1")  # no ongoing episode, no facts, nothing queued
        report = await kernel.consolidate_all()
        assert [a.agent_id for a in report.agents] == [A]
        assert not (await _decision(kernel, noise)).active
        assert [a.agent_id for a in (await kernel.consolidate_all()).agents] == []
    async with open_kernel(None) as kernel:  # without a judge the band is no work
        await _turn(kernel, "s2", NOISE_RECORDED)
        await kernel.end_session(A, "s2")
        assert [a.agent_id for a in (await kernel.consolidate_all()).agents] == []


async def test_a_chat_judge_on_a_real_endpoint_reads_the_band(open_kernel: Any) -> None:
    seen: list[dict[str, Any]] = []

    def respond(request: Request) -> Reply:
        body = request.json()
        seen.append(body)
        answered = json.loads(body["messages"][1]["content"])["agent_answered"]
        made = CHECKS.get(answered, answered.startswith("Monorepo"))
        return chat_reply(json.dumps({"is_decision": made, "reason": "a choice made"}))

    with serve(respond) as server:
        async with ChatJudge(server.url, "gate-model") as judge:
            async with open_kernel(judge) as kernel:
                decision = await _turn(kernel, "s1", DECISION_REJECTED)
                noise = await _turn(kernel, "s2", NOISE_RECORDED)
                report = await kernel.consolidate(A)
                assert report.count(Action.DECISIONS_RESTORED) == 1
                assert report.count(Action.DECISIONS_REJECTED) == 1
                assert (await _decision(kernel, decision)).active
                assert not (await _decision(kernel, noise)).active
    asked = [json.loads(body["messages"][1]["content"]) for body in seen]
    assert len(seen) == 2 + len(CHECKS)
    assert all(body["messages"][0]["content"] == GATE_REVIEW_SYSTEM_PROMPT for body in seen)
    assert sorted(a["agent_answered"] for a in asked) == sorted(
        [*CHECKS, DECISION_REJECTED, NOISE_RECORDED]
    )
    assert {a["user_said"] for a in asked if a["agent_answered"] not in CHECKS} == {"What now?"}


class SlowJsonJudge:
    """Speaks ``complete_json`` only, taking ``delay_s`` for each call, as a slow model
    behind ChatJudge would for each group of prompts."""

    name = "slow"

    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s
        self.asked: list[str] = []

    async def complete_json(
        self, system: str, prompts: Sequence[str], schema: type[Any]
    ) -> list[Any]:
        await asyncio.sleep(self.delay_s)
        self.asked.extend(prompts)
        answered = [json.loads(p)["agent_answered"] for p in prompts]
        return [
            schema.model_validate({"is_decision": CHECKS.get(a, False), "reason": "slow"})
            for a in answered
        ]


async def test_a_slow_judge_answers_part_of_a_batch_and_the_rest_next_run(
    open_kernel: Any,
) -> None:
    """Before, a batch that outlasted judge_timeout_s lost every answer, and the same batch
    timed out again at every run: nothing in the band was ever read."""
    judge = SlowJsonJudge(delay_s=0.4)
    slow = {"consolidation": {"judge_timeout_s": 0.6}}
    async with open_kernel(judge, **slow) as kernel:
        recorded = [await _turn(kernel, f"s{n}", NOISE_RECORDED) for n in range(12)]
        first = await kernel.consolidate(A)
        assert 0 < first.count(Action.DECISIONS_REJECTED) < 12
        assert first.count(Action.JUDGE_FALLBACK) == 12 - first.count(Action.DECISIONS_REJECTED)
        for _ in range(3):
            await kernel.consolidate(A)
        assert not any([(await _decision(kernel, d)).active for d in recorded])


@pytest.mark.parametrize("wrong", list(CHECKS))
async def test_a_judge_that_fails_a_check_question_has_none_of_its_answers_applied(
    open_kernel: Any, wrong: str
) -> None:
    """A judge leaning to "yes" restored noise as decisions (a small base model took the
    authored gate set's noise from 0 to 0.188): one wrong answer to a question whose answer
    is not in doubt, and the run applies none of its answers."""
    checks = {**CHECKS, wrong: not CHECKS[wrong]}
    judge = BandJudge({NOISE_RECORDED: False, DECISION_REJECTED: True}, checks=checks)
    async with open_kernel(judge) as kernel:
        noise = await _turn(kernel, "s1", NOISE_RECORDED)
        decision = await _turn(kernel, "s2", DECISION_REJECTED)
        report = await kernel.consolidate(A)
        (run,) = report.agents
        assert run.error is not None and "1 of 4 check questions" in run.error
        assert report.count(Action.JUDGE_FALLBACK) == 2 and report.judge_calls == 1
        assert report.count(Action.DECISIONS_REVIEWED) == 0
        assert (await _decision(kernel, noise)).active
        assert not (await _decision(kernel, decision)).active
        judge.checks = CHECKS  # the same questions next run, to a judge that passes
        report = await kernel.consolidate(A)
        assert report.count(Action.DECISIONS_REJECTED) == 1
        assert report.count(Action.DECISIONS_RESTORED) == 1
    assert len(judge.requests) == 4 and judge.checks_asked == 2 * len(CHECKS)


async def test_the_check_questions_can_be_off(open_kernel: Any) -> None:
    judge = BandJudge({DECISION_REJECTED: True}, checks={})
    off = {"consolidation": {"judge_checks": False}}
    async with open_kernel(judge, **off) as kernel:
        decision = await _turn(kernel, "s1", DECISION_REJECTED)
        report = await kernel.consolidate(A)
        assert report.count(Action.DECISIONS_RESTORED) == 1
        assert (await _decision(kernel, decision)).active
    assert judge.checks_asked == 0
