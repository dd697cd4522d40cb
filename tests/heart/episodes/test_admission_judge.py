"""Admission with a scripted judge: its four decisions are executed, and every kind of bad
answer (garbage, unknown target, error, timeout) falls back to the rules, on the record."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from memory_kernel import JudgeError, MemoryKernel
from memory_kernel.judges import AdmissionRequest, AdmissionVerdict, RuleJudge
from memory_kernel.models.enums import AdmissionStatus, DecidedBy, EventKind
from memory_kernel.models.episodes import AdmissionDecision, EpisodeEnd
from memory_kernel.testing import FrozenClock, ScriptedJudge
from tests.conftest import schema_config
from tests.heart.episodes.conftest import JUDGE_TIMEOUT_S, admission_event, run


def _answer(decision: str, reason: str = "scripted") -> Any:
    def answer(request: AdmissionRequest) -> dict[str, str]:
        return {
            "decision": decision,
            "target_run_id": str(request.candidates[0].id),
            "reason": reason,
        }

    return answer


async def _second_run(judged: MemoryKernel) -> tuple[EpisodeEnd, EpisodeEnd]:
    """Two successes of the same task with different references (the rules say MERGE)."""
    first = await run(judged, "success", references=["A"])
    second = await run(judged, "success", references=["B"])
    return first, second


async def test_prefilter_decides_without_asking_the_judge(
    judged: MemoryKernel, judge: ScriptedJudge
) -> None:
    end = await run(judged, "success")
    assert end.decision is AdmissionDecision.ADD and end.decided_by is DecidedBy.RULE
    assert judge.requests == []
    event = await admission_event(judged, end.episode.id)
    assert event["details"]["stage"] == "prefilter"


@pytest.mark.parametrize("decision", ["ADD", "NOT", "REPLACE", "MERGE"])
async def test_the_judges_decision_is_executed(
    judged: MemoryKernel, judge: ScriptedJudge, decision: str
) -> None:
    judge.add(_answer(decision, reason=f"the judge says {decision}"))
    first, second = await _second_run(judged)
    assert second.decision == decision
    assert second.decided_by is DecidedBy.JUDGE
    assert second.reason == f"the judge says {decision}"
    assert second.judge_error is None
    expected_target = None if decision == "ADD" else first.episode.id
    assert second.target_id == expected_target
    # The judge saw the new run and the stored one as its candidate.
    (request,) = judge.requests
    assert request.run.id == second.episode.id and request.run.references == ("B",)
    assert [c.id for c in request.candidates] == [first.episode.id]
    assert request.candidates[0].similarity > 0.99
    old = await judged.heart.episodes.get(first.episode.id, agent_id="a1")
    new = second.episode
    expected = {
        "ADD": (AdmissionStatus.ACTIVE, AdmissionStatus.ACTIVE),
        "NOT": (AdmissionStatus.ACTIVE, AdmissionStatus.NOT_ADMITTED),
        "REPLACE": (AdmissionStatus.SUPERSEDED, AdmissionStatus.ACTIVE),
        "MERGE": (AdmissionStatus.ACTIVE, AdmissionStatus.ACTIVE),
    }[decision]
    assert (old.admission, new.admission) == expected
    if decision == "MERGE":
        assert new.canonical and old.canonical_id == new.id
        assert new.references == ("A", "B")
    event = await admission_event(judged, second.episode.id)
    assert event["event"] == f"admission_{decision.lower()}"
    assert event["decided_by"] == DecidedBy.JUDGE
    assert event["details"]["judge"] == "scripted" and event["details"]["stage"] == "judge"


async def test_a_verdict_object_is_accepted(judged: MemoryKernel, judge: ScriptedJudge) -> None:
    judge.add(lambda r: AdmissionVerdict(decision=AdmissionDecision.ADD, reason="keep both"))
    _, second = await _second_run(judged)
    assert (second.decision, second.decided_by) == (AdmissionDecision.ADD, DecidedBy.JUDGE)


def _hang(judge: ScriptedJudge) -> None:
    judge.delay_s = 30 * JUDGE_TIMEOUT_S


def _raise(judge: ScriptedJudge) -> None:
    judge.fail = ConnectionError("LLM unreachable")


BAD_ANSWERS: list[tuple[str, Any, str]] = [
    ("garbage-text", "I think you should MERGE them", "invalid answer"),
    ("garbage-none", None, "invalid answer"),
    ("unknown-decision", {"decision": "MAYBE", "reason": "hm"}, "invalid answer"),
    ("no-reason", {"decision": "ADD"}, "invalid answer"),
    ("replace-without-target", {"decision": "REPLACE", "reason": "better"}, "invalid answer"),
    (
        "target-not-a-candidate",
        {"decision": "REPLACE", "target_run_id": str(uuid.UUID(int=7)), "reason": "r"},
        "is not one of the candidates",
    ),
    ("judge-error-slot", JudgeError("the model refused"), "the model refused"),
    ("hang", _hang, f"timed out after {JUDGE_TIMEOUT_S}s"),
    ("raise", _raise, "raised ConnectionError: LLM unreachable"),
    ("script-spent", None, "no answer left"),
]


@pytest.mark.parametrize(("case", "answer", "error"), BAD_ANSWERS, ids=[c[0] for c in BAD_ANSWERS])
async def test_bad_judge_answers_fall_back_to_the_rules(
    judged: MemoryKernel, judge: ScriptedJudge, case: str, answer: Any, error: str
) -> None:
    if case in ("hang", "raise"):
        answer(judge)
    elif case != "script-spent":
        judge.add(answer)
    first, second = await _second_run(judged)
    # The rule decision for two successes with different references.
    assert second.decision is AdmissionDecision.MERGE
    assert second.target_id == first.episode.id
    assert second.decided_by is DecidedBy.RULE
    assert second.judge_error is not None and error in second.judge_error
    assert second.judge_error.endswith("the rules decided")
    assert len(judge.requests) == 1
    event = await admission_event(judged, second.episode.id)
    assert event["event"] == EventKind.ADMISSION_MERGE
    assert event["decided_by"] == DecidedBy.RULE
    assert event["details"]["stage"] == "rules"
    assert event["details"]["judge"] == "scripted"
    assert error in event["details"]["judge_error"]


async def test_judge_is_not_asked_without_an_embedding(
    judged: MemoryKernel, judge: ScriptedJudge
) -> None:
    await run(judged, "success")
    judged.embedder.fail = RuntimeError("down")  # type: ignore[attr-defined]
    end = await run(judged, "success")
    assert end.decision is AdmissionDecision.ADD and end.reason.startswith("no embedding")
    assert judge.requests == []


async def test_a_rule_judge_passed_as_the_judge_is_the_default(
    pg_dsn: str, drop_schema: str, clock: FrozenClock
) -> None:
    async with MemoryKernel.open(
        pg_dsn, config=schema_config(drop_schema), clock=clock, judge=RuleJudge()
    ) as kernel:
        await run(kernel, "failure")
        end = await run(kernel, "success")
        event = await admission_event(kernel, end.episode.id)
    assert (end.decision, end.decided_by) == (AdmissionDecision.REPLACE, DecidedBy.RULE)
    assert event["details"]["judge"] is None
