"""The pure parts of episodes: start dedup, pre-filter, answer checking, decision, plan."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memory_kernel.heart.episodes.policy import (
    JudgeAnswer,
    OngoingEpisode,
    check_answer,
    decide,
    find_duplicate,
    plan_admission,
    prefilter,
)
from memory_kernel.judges import (
    AdmissionCandidate,
    AdmissionRequest,
    AdmissionRules,
    AdmissionRun,
    AdmissionVerdict,
)
from memory_kernel.models.enums import AdmissionStatus, DecidedBy, EpisodeStatus, EventKind
from memory_kernel.models.episodes import AdmissionDecision, Episode

T0 = datetime(2026, 1, 1, tzinfo=UTC)
RULES = AdmissionRules()
A, B, C = (uuid.UUID(int=i) for i in (1, 2, 3))


def _ongoing(summary: str, sim: float | None = None, n: int = 1) -> OngoingEpisode:
    return OngoingEpisode(uuid.UUID(int=n), summary, sim)


def _dup(summary: str, recent: list[OngoingEpisode]) -> uuid.UUID | None:
    match = find_duplicate(summary, recent, overlap_threshold=0.7, similarity_threshold=0.85)
    return None if match is None else match.id


class TestFindDuplicate:
    def test_identical_and_overlapping_summaries_match(self) -> None:
        assert _dup("Show me your status", [_ongoing("show me your STATUS!")]) == A
        assert _dup("Here's my current status", [_ongoing("Here's my status report")]) == A

    def test_overlap_must_exceed_the_threshold(self) -> None:
        # 7 of 10 words: exactly 0.7 is not more than 0.7.
        a = "w1 w2 w3 w4 w5 w6 w7 w8 w9 w10"
        assert _dup(a, [_ongoing("w1 w2 w3 w4 w5 w6 w7 x8 x9 x10")]) is None
        assert _dup(a, [_ongoing("w1 w2 w3 w4 w5 w6 w7 w8 x9 x10")]) == A

    def test_embedding_similarity_matches_rewordings(self) -> None:
        assert _dup("deploy billing", [_ongoing("ship the invoicing service", 0.9)]) == A
        assert _dup("deploy billing", [_ongoing("ship the invoicing service", 0.85)]) is None

    @pytest.mark.parametrize("summary", ["", "   ", "\n"])
    def test_empty_summaries_never_match(self, summary: str) -> None:
        assert _dup(summary, [_ongoing(summary, 1.0), _ongoing("status", 1.0, 2)]) is None
        assert _dup("status", [_ongoing(summary, 1.0)]) is None

    def test_best_match_wins_and_ties_go_to_the_first(self) -> None:
        recent = [_ongoing("show me the weather status", None, 1), _ongoing("your status", None, 2)]
        assert _dup("show me your status", recent) == B
        recent = [_ongoing("status now", None, 3), _ongoing("status now", None, 1)]
        assert _dup("status now", recent) == C

    def test_nothing_recent(self) -> None:
        assert _dup("status", []) is None


def _cand(
    sim: float, outcome: str = "success", id_: uuid.UUID = A, **kw: Any
) -> AdmissionCandidate:
    return AdmissionCandidate(id=id_, summary="s", outcome=outcome, similarity=sim, **kw)


def _req(*cands: AdmissionCandidate) -> AdmissionRequest:
    run = AdmissionRun(id=C, summary="s", outcome="success")
    return AdmissionRequest(agent_id="a", run=run, candidates=cands)


class TestPrefilter:
    def test_no_candidates_is_add(self) -> None:
        verdict = prefilter(_req(), threshold=0.7)
        assert verdict is not None and verdict.decision is AdmissionDecision.ADD

    def test_low_similarity_is_add(self) -> None:
        verdict = prefilter(_req(_cand(0.69)), threshold=0.7)
        assert verdict is not None and "0.69 is below the threshold 0.70" in verdict.reason

    def test_similar_goes_to_the_judge(self) -> None:
        assert prefilter(_req(_cand(0.7)), threshold=0.7) is None


class TestCheckAnswer:
    def test_valid_answers(self) -> None:
        req = _req(_cand(0.9))
        got = check_answer({"decision": "merge", "target_run_id": str(A), "reason": "x"}, req)
        assert got.decision is AdmissionDecision.MERGE and got.target_run_id == A
        add = check_answer({"decision": "ADD", "target_run_id": str(B), "reason": "x"}, req)
        assert add.target_run_id is None  # a stray target on ADD is dropped
        json_text = '{"decision": "NOT", "reason": "dup", "extra": 1}'
        assert check_answer(AdmissionVerdict.model_validate_json(json_text), req).reason == "dup"

    @pytest.mark.parametrize(
        ("answer", "match"),
        [
            ("garbage", "invalid answer"),
            (None, "invalid answer"),
            (42, "invalid answer"),
            ({"decision": "ADD"}, "invalid answer"),
            ({"decision": "ADD", "reason": ""}, "invalid answer"),
            ({"decision": "MERGE", "reason": "x"}, "invalid answer"),
            ({"decision": "REPLACE", "target_run_id": "nope", "reason": "x"}, "invalid answer"),
            ({"decision": "REPLACE", "target_run_id": str(B), "reason": "x"}, "not one of the"),
            ({"decision": "NOT", "target_run_id": str(B), "reason": "x"}, "not one of the"),
            (RuntimeError("boom"), "the judge failed: boom"),
        ],
    )
    def test_invalid_answers(self, answer: object, match: str) -> None:
        with pytest.raises(ValueError, match=match):
            check_answer(answer, _req(_cand(0.9)))


class TestDecide:
    def _decide(self, req: AdmissionRequest, answer: JudgeAnswer | None, embedded: bool = True):  # type: ignore[no-untyped-def]
        return decide(req, threshold=0.7, rules=RULES, embedded=embedded, answer=answer)

    def test_no_embedding_is_add(self) -> None:
        d = self._decide(_req(_cand(0.99)), None, embedded=False)
        assert d.verdict.decision is AdmissionDecision.ADD and d.stage == "prefilter"

    def test_prefilter_ignores_the_judge(self) -> None:
        answer = JudgeAnswer("j", (), answer={"decision": "NOT", "reason": "x"})
        d = self._decide(_req(), answer)
        assert (d.stage, d.decided_by, d.judge_error) == ("prefilter", DecidedBy.RULE, None)

    def test_usable_judge_answer_wins(self) -> None:
        req = _req(_cand(0.9, "failure"))
        answer = JudgeAnswer("j", (A,), answer={"decision": "ADD", "reason": "mine"})
        d = self._decide(req, answer)
        assert (d.verdict.decision, d.decided_by, d.stage) == ("ADD", DecidedBy.JUDGE, "judge")

    def test_changed_candidates_fall_back(self) -> None:
        req = _req(_cand(0.9, "failure"))
        answer = JudgeAnswer("j", (B,), answer={"decision": "ADD", "reason": "mine"})
        d = self._decide(req, answer)
        assert d.verdict.decision is AdmissionDecision.REPLACE and d.decided_by is DecidedBy.RULE
        assert d.judge_error is not None and "candidates changed" in d.judge_error

    def test_no_judge_means_rules_without_error(self) -> None:
        d = self._decide(_req(_cand(0.9, "failure")), None)
        assert (d.stage, d.judge_error, d.similarity) == ("rules", None, 0.9)


def _episode(id_: uuid.UUID, outcome: str, *, minutes: int, **kw: Any) -> Episode:
    values: dict[str, Any] = {
        "id": id_,
        "agent_id": "a",
        "session_id": "s",
        "summary": "s",
        "status": EpisodeStatus.COMPLETED,
        "outcome": outcome,
        "admission": AdmissionStatus.ACTIVE,
        "canonical": True,
        "canonical_id": None,
        "superseded_by": None,
        "references": (),
        "artifacts": (),
        "usage_count": 0,
        "started_at": T0,
        "ended_at": T0 + timedelta(minutes=minutes),
        "metadata": {},
        "created_at": T0,
        "updated_at": T0,
    }
    values.update(kw)
    return Episode(**values)


def _verdict(decision: str, target: uuid.UUID | None = None) -> AdmissionVerdict:
    return AdmissionVerdict.model_validate(
        {"decision": decision, "target_run_id": target and str(target), "reason": "r"}
    )


class TestPlan:
    def test_add_and_not(self) -> None:
        new = _episode(B, "success", minutes=2)
        assert plan_admission(new, _verdict("ADD"), None, T0).new_values == {"admission": "active"}
        plan = plan_admission(new, _verdict("NOT", A), None, T0)
        assert plan.new_values == {"admission": "not_admitted"} and plan.target_id is None

    def test_replace_supersedes_the_target_and_moves_its_group(self) -> None:
        old = _episode(A, "failure", minutes=1)
        plan = plan_admission(_episode(B, "success", minutes=2), _verdict("REPLACE", A), old, T0)
        assert plan.target_id == A and plan.target_event is EventKind.SUPERSEDED
        assert plan.target_values["admission"] == "superseded"
        assert plan.target_values["superseded_by"] == B
        assert plan.repoint == (A, B)

    def test_merge_newer_success_becomes_canonical_with_aggregates(self) -> None:
        old = _episode(A, "success", minutes=1, usage_count=4, references=("x", "y"))
        new = _episode(B, "success", minutes=2, usage_count=1, references=("y", "z"))
        plan = plan_admission(new, _verdict("MERGE", A), old, T0)
        assert plan.new_values["canonical"] is True
        assert plan.new_values["usage_count"] == 5
        assert plan.new_values["references"] == ["x", "y", "z"]
        assert plan.target_values["canonical"] is False
        assert plan.target_values["canonical_id"] == B
        assert plan.repoint == (A, B)

    def test_merge_success_beats_a_newer_failure(self) -> None:
        old = _episode(A, "success", minutes=1, usage_count=2, artifacts=("a",))
        new = _episode(B, "failed", minutes=2, artifacts=("b",))
        plan = plan_admission(new, _verdict("MERGE", A), old, T0)
        assert plan.new_values["canonical"] is False and plan.new_values["canonical_id"] == A
        assert plan.target_values["canonical"] is True
        assert plan.target_values["artifacts"] == ["a", "b"]
        assert plan.target_values["usage_count"] == 2
        assert plan.repoint is None

    def test_replace_without_target_is_an_add(self) -> None:
        plan = plan_admission(_episode(B, "success", minutes=2), _verdict("REPLACE", A), None, T0)
        assert plan.new_values == {"admission": "active"} and plan.target_id is None
