"""RuleJudge: the seed's four admission scenarios as pure decisions."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import pytest

from memory_kernel.config import HeartConfig
from memory_kernel.judges import (
    AdmissionCandidate,
    AdmissionRequest,
    AdmissionRules,
    AdmissionRun,
    Judge,
    RuleJudge,
)
from memory_kernel.judges.rules import OutcomeClass, classify_outcome, decide_admission
from memory_kernel.models.episodes import AdmissionDecision

OLD, OLDER, NEW = (uuid.UUID(int=i) for i in (1, 2, 3))
TASK = "Generate schema for the orders table"


def _run(
    outcome: str, refs: Sequence[str] = (), arts: Sequence[str] = (), summary: str = TASK
) -> AdmissionRun:
    return AdmissionRun(
        id=NEW, summary=summary, outcome=outcome, references=tuple(refs), artifacts=tuple(arts)
    )


def _cand(
    sim: float,
    outcome: str,
    refs: Sequence[str] = (),
    arts: Sequence[str] = (),
    id_: uuid.UUID = OLD,
    summary: str = TASK,
) -> AdmissionCandidate:
    return AdmissionCandidate(
        id=id_,
        summary=summary,
        outcome=outcome,
        references=tuple(refs),
        artifacts=tuple(arts),
        similarity=sim,
    )


def _decide(run: AdmissionRun, *cands: AdmissionCandidate) -> tuple[str, uuid.UUID | None]:
    verdict = decide_admission(
        AdmissionRequest(agent_id="a", run=run, candidates=cands), AdmissionRules()
    )
    return verdict.decision.value, verdict.target_run_id


@pytest.mark.parametrize(
    ("outcome", "expected"),
    [
        ("success", OutcomeClass.SUCCESS),
        ("Succeeded after 2 retries", OutcomeClass.SUCCESS),
        ("OK", OutcomeClass.SUCCESS),
        ("failure", OutcomeClass.FAILURE),
        ("failed to deploy: timeout", OutcomeClass.FAILURE),
        ("not successful", OutcomeClass.FAILURE),
        ("partial", OutcomeClass.PARTIAL),
        ("partially done", OutcomeClass.PARTIAL),
        ("the user left", OutcomeClass.UNKNOWN),
        ("", OutcomeClass.UNKNOWN),
        (None, OutcomeClass.UNKNOWN),
    ],
)
def test_classify_outcome(outcome: str | None, expected: OutcomeClass) -> None:
    assert classify_outcome(outcome) is expected


class TestSeedScenarios:
    def test_identical_run_same_outcome_is_not(self) -> None:
        assert _decide(_run("success", ["A"]), _cand(0.98, "success", ["A", "B"])) == ("NOT", OLD)
        assert _decide(_run("failure"), _cand(0.96, "failed")) == ("NOT", OLD)

    def test_better_version_replaces(self) -> None:
        assert _decide(_run("success"), _cand(0.92, "failure")) == ("REPLACE", OLD)

    def test_complementary_successes_merge(self) -> None:
        assert _decide(_run("success", ["B"]), _cand(0.88, "success", ["A"])) == ("MERGE", OLD)
        assert _decide(_run("success", (), ["b.sql"]), _cand(0.97, "success")) == ("MERGE", OLD)

    def test_different_approach_merges(self) -> None:
        run = _run("success", summary="Generate the orders schema with migrations by hand")
        assert _decide(run, _cand(0.9, "success")) == ("MERGE", OLD)

    def test_otherwise_add(self) -> None:
        assert _decide(_run("success")) == ("ADD", None)
        assert _decide(_run("failure"), _cand(0.97, "success")) == ("ADD", None)  # worse
        assert _decide(_run("success"), _cand(0.8, "failure")) == ("ADD", None)  # other task
        assert _decide(_run("partial"), _cand(0.9, "failure")) == ("ADD", None)


class TestNearIdentical:
    def test_word_overlap_counts_only_for_the_same_task(self) -> None:
        run = _run("success", summary="Generate schema for orders table")
        same_words = _cand(0.9, "success", summary="generate SCHEMA for the orders table")
        assert _decide(run, same_words) == ("NOT", OLD)
        # A summary contained in another has overlap 1.0 but is not the same task below 0.85.
        assert _decide(run, _cand(0.75, "success", summary="generate schema")) == ("ADD", None)

    def test_free_text_outcomes_must_match_exactly(self) -> None:
        assert _decide(_run("user left"), _cand(0.99, "User  left")) == ("NOT", OLD)
        assert _decide(_run("user left"), _cand(0.99, "user stayed")) == ("ADD", None)

    def test_new_references_are_not_redundant(self) -> None:
        assert _decide(_run("success", ["A", "C"]), _cand(0.99, "success", ["A"])) == ("MERGE", OLD)


def test_rule_order_not_beats_replace_beats_merge() -> None:
    cands = (
        _cand(0.95, "failure", id_=OLDER),
        _cand(0.9, "success", ["A"], id_=OLD, summary="Generate orders schema via ORM"),
    )
    assert _decide(_run("success"), *cands) == ("REPLACE", OLDER)
    cands = (_cand(0.99, "failure", id_=OLDER), _cand(0.96, "success", id_=OLD))
    assert _decide(_run("success"), *cands) == ("NOT", OLD)


def test_thresholds_come_from_config() -> None:
    rules = AdmissionRules.from_config(HeartConfig(admission_same_task_similarity=0.75))
    request = AdmissionRequest(
        agent_id="a", run=_run("success"), candidates=(_cand(0.8, "failure"),)
    )
    assert decide_admission(request, rules).decision is AdmissionDecision.REPLACE


async def test_rule_judge_is_a_batched_judge() -> None:
    judge = RuleJudge()
    assert isinstance(judge, Judge) and judge.name == "rules"
    requests = [
        AdmissionRequest(agent_id="a", run=_run("success"), candidates=(_cand(0.92, "failure"),)),
        AdmissionRequest(agent_id="a", run=_run("success"), candidates=()),
    ]
    verdicts = await judge.admit(requests)
    assert [v.decision for v in verdicts] == ["REPLACE", "ADD"]  # type: ignore[union-attr]
