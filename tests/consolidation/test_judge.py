"""Ambiguous cases go to the judge in one batched call per kind; its answers are validated
and applied, and any failure falls back to the rules (nothing changes) and is recorded."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest

from memory_kernel import MemoryKernel
from memory_kernel.consolidation.judging import (
    CONSOLIDATION_SYSTEM_PROMPT,
    ConflictKind,
    ConflictRequest,
    ConflictVerdict,
)
from memory_kernel.errors import JudgeError
from memory_kernel.models.consolidation import ConsolidationAction as Action
from memory_kernel.models.enums import FactStatus
from memory_kernel.testing import FakeEmbedder, FrozenClock
from tests.conftest import schema_config
from tests.consolidation.conftest import ResolvingJudge, add_fact, events_of, get
from tests.judge_checks import fact_check

A = "agent-a"
WINDOW_OLD = "The deploy window opens at 14:00 on Fridays."
WINDOW_NEW = "The deploy window opens at 16:00 on Fridays."
LIKES = "Alice likes the new dashboard layout."
DISLIKES = "Alice dislikes the new dashboard layout a lot."
DARK = "User prefers dark mode in the editor."
DARK_TOO = "User prefers the dark mode theme in the editor window."


@pytest.fixture
def judge() -> ResolvingJudge:
    return ResolvingJudge()


@pytest.fixture
async def jkernel(
    pg_dsn: str, drop_schema: str, clock: FrozenClock, embedder: FakeEmbedder,
    judge: ResolvingJudge, request: pytest.FixtureRequest,
) -> AsyncIterator[MemoryKernel]:  # fmt: skip
    sections: dict[str, dict[str, object]] = getattr(request, "param", {})
    config = schema_config(drop_schema, **sections)
    async with MemoryKernel.open(
        pg_dsn, config=config, clock=clock, embedder=embedder, judge=judge
    ) as opened:
        yield opened


async def test_judge_supersedes_a_changed_value(
    jkernel: MemoryKernel, judge: ResolvingJudge, clock: FrozenClock
) -> None:
    old = await add_fact(jkernel, A, WINDOW_OLD)
    clock.advance(minutes=5)
    new = await add_fact(jkernel, A, WINDOW_NEW)
    judge.add({"decision": "SUPERSEDE", "winner_id": str(new), "reason": "newer schedule"})
    report = await jkernel.consolidate(A)
    assert report.judge_calls == 1
    [asked] = judge.requests
    assert isinstance(asked, ConflictRequest) and asked.kind is ConflictKind.CONFLICT
    assert {f.id for f in asked.facts} == {old, new}
    retired = await get(jkernel, A, old)
    assert retired.status is FactStatus.SUPERSEDED and retired.superseded_by == new
    assert (await get(jkernel, A, new)).status is FactStatus.ACTIVE
    [event] = [e for e in await events_of(jkernel, A) if e.event == "superseded"]
    assert event.decided_by == "judge" and event.memory_id == old and "newer" in event.reason


async def test_judge_contradiction_halves_both(
    jkernel: MemoryKernel, judge: ResolvingJudge
) -> None:
    a = await add_fact(jkernel, A, LIKES, confidence=0.8)
    b = await add_fact(jkernel, A, DISLIKES, confidence=0.6)
    judge.add({"decision": "contradiction", "reason": "cannot both hold"})
    report = await jkernel.consolidate(A)
    assert report.count(Action.CONTRADICTION) == 1
    assert (await get(jkernel, A, a)).confidence == pytest.approx(0.4)
    assert (await get(jkernel, A, b)).confidence == pytest.approx(0.3)
    judge.add({"decision": "contradiction", "reason": "still"})
    await jkernel.consolidate(A)  # asked again, but a pair is never halved twice
    assert (await get(jkernel, A, a)).confidence == pytest.approx(0.4)


async def test_judge_merge_with_new_wording_reembeds_the_winner(
    jkernel: MemoryKernel, judge: ResolvingJudge, embedder: FakeEmbedder
) -> None:
    a = await add_fact(jkernel, A, DARK, confidence=0.9)
    b = await add_fact(jkernel, A, DARK_TOO, confidence=0.7)
    wording = "User prefers the dark mode theme in the editor."
    judge.add({"decision": "merge", "winner_id": str(a), "merged_content": wording,
               "reason": "same preference"})  # fmt: skip
    report = await jkernel.consolidate(A)
    winner, loser = await get(jkernel, A, a), await get(jkernel, A, b)
    assert winner.content == wording and winner.status is FactStatus.ACTIVE
    assert loser.status is FactStatus.MERGED and loser.merged_into == a
    assert report.count(Action.REEMBEDDED) == 1
    hits = await jkernel.heart.facts.search(A, wording, k=1)
    assert hits[0].fact.id == a and hits[0].similarity == pytest.approx(1.0, abs=1e-5)


@pytest.mark.parametrize(
    "answer",
    [
        {"decision": "merge", "reason": "same"},  # a changed value is never merged
        {"decision": "supersede", "winner_id": "not-a-uuid", "reason": "x"},
        {"decision": "supersede", "reason": "no winner"},
        {"decision": "explode", "reason": "?"},
        "garbage",
        JudgeError("this item failed"),
    ],
)
async def test_invalid_answers_fall_back_to_the_rules(
    jkernel: MemoryKernel, judge: ResolvingJudge, answer: object
) -> None:
    a = await add_fact(jkernel, A, WINDOW_OLD)
    b = await add_fact(jkernel, A, WINDOW_NEW)
    judge.add(answer)
    report = await jkernel.consolidate(A)
    assert report.count(Action.JUDGE_FALLBACK) == 1
    assert report.count(Action.MERGED) == report.count(Action.SUPERSEDED) == 0
    for fact in (a, b):
        assert (await get(jkernel, A, fact)).status is FactStatus.ACTIVE


async def test_judge_failure_is_recorded_and_nothing_changes(
    jkernel: MemoryKernel, judge: ResolvingJudge
) -> None:
    await add_fact(jkernel, A, WINDOW_OLD)
    await add_fact(jkernel, A, WINDOW_NEW)
    await add_fact(jkernel, A, DARK)
    await add_fact(jkernel, A, DARK_TOO)
    judge.fail = RuntimeError("LLM down")
    report = await jkernel.consolidate(A)
    agent = report.agents[0]
    assert agent.judge_calls == 2  # one per kind, both failed
    assert report.count(Action.JUDGE_FALLBACK) == 2
    assert agent.error is not None and "LLM down" in agent.error
    assert [e for e in await events_of(jkernel, A)] == []


@pytest.mark.parametrize("jkernel", [{"consolidation": {"judge_max_calls": 1}}], indirect=True)
async def test_judge_calls_per_run_are_capped(jkernel: MemoryKernel, judge: ResolvingJudge) -> None:
    await add_fact(jkernel, A, WINDOW_OLD)
    await add_fact(jkernel, A, WINDOW_NEW)
    await add_fact(jkernel, A, DARK)
    await add_fact(jkernel, A, DARK_TOO)
    judge.add({"decision": "keep_both", "reason": "both fine"})
    report = await jkernel.consolidate(A)
    assert report.judge_calls == 1 and len(judge.requests) == 1
    assert report.count(Action.KEPT_BOTH) == 2
    assert report.count(Action.JUDGE_FALLBACK) == 1  # the merge question was not asked


@pytest.mark.parametrize("jkernel", [{"consolidation": {"judge_max_items": 1}}], indirect=True)
async def test_judge_items_per_call_are_capped(
    jkernel: MemoryKernel, judge: ResolvingJudge
) -> None:
    await add_fact(jkernel, A, WINDOW_OLD)
    await add_fact(jkernel, A, WINDOW_NEW)
    await add_fact(jkernel, A, LIKES)
    await add_fact(jkernel, A, DISLIKES)
    judge.add({"decision": "keep_both", "reason": "fine"})
    report = await jkernel.consolidate(A)
    assert len(judge.requests) == 1
    assert report.count(Action.JUDGE_FALLBACK) == 1


@pytest.mark.parametrize("jkernel", [{"consolidation": {"judge_max_items": 1}}], indirect=True)
async def test_a_case_kept_apart_is_not_asked_again_so_the_next_one_is(
    jkernel: MemoryKernel, judge: ResolvingJudge
) -> None:
    """Before, a "keep both" was forgotten: the same most similar case was asked every night
    and the one after it never."""
    await add_fact(jkernel, A, WINDOW_OLD)
    await add_fact(jkernel, A, WINDOW_NEW)
    await add_fact(jkernel, A, LIKES)
    await add_fact(jkernel, A, DISLIKES)
    judge.add(*[{"decision": "keep_both", "reason": "both hold"}] * 2)
    first = await jkernel.consolidate(A)
    second = await jkernel.consolidate(A)
    third = await jkernel.consolidate(A)
    assert [first.judge_calls, second.judge_calls, third.judge_calls] == [1, 1, 0]
    requests: list[Any] = list(judge.requests)  # ConflictRequests, as resolve received them
    asked = [frozenset(f.content for f in r.facts) for r in requests]
    assert len(asked) == 2
    assert set(asked) == {frozenset((LIKES, DISLIKES)), frozenset((WINDOW_OLD, WINDOW_NEW))}
    kept = [e for e in await events_of(jkernel, A) if e.event == "judged_apart"]
    assert len(kept) == 2 and {e.decided_by for e in kept} == {"judge"}
    assert all(len(e.details["members"]) == 2 and e.reason == "both hold" for e in kept)
    assert third.count(Action.KEPT_BOTH) == third.count(Action.JUDGE_FALLBACK) == 0


class JsonJudge:
    """Speaks ChatJudge's generic batched call (``complete_json``), not ``resolve``."""

    name = "json"

    def __init__(self) -> None:
        self.prompts: list[str] = []

    async def complete_json(
        self, system: str, prompts: Sequence[str], schema: type[Any]
    ) -> list[Any]:
        assert system == CONSOLIDATION_SYSTEM_PROMPT and schema is ConflictVerdict
        self.prompts.extend(p for p in prompts if fact_check(p) is None)
        keep = {"decision": "keep_both", "reason": "ok"}
        return [schema.model_validate(fact_check(p) or keep) for p in prompts]


async def test_a_chat_style_judge_is_asked_through_complete_json(
    pg_dsn: str, drop_schema: str, clock: FrozenClock, embedder: FakeEmbedder
) -> None:
    judge = JsonJudge()
    async with MemoryKernel.open(
        pg_dsn, config=schema_config(drop_schema), clock=clock, embedder=embedder,
        judge=judge,  # type: ignore[arg-type]
    ) as kernel:  # fmt: skip
        await add_fact(kernel, A, LIKES)
        await add_fact(kernel, A, DISLIKES)
        report = await kernel.consolidate(A)
    assert report.judge_calls == 1 and report.count(Action.KEPT_BOTH) == 1
    assert "Alice dislikes" in judge.prompts[0] and '"question": "conflict"' in judge.prompts[0]


SOLD_OUT = "The bakery sells out of sourdough early."
GONE = "The bakery's sourdough is usually gone by mid-morning."  # the same, other words
SLOW = "Our landlord is very slow to answer emails."
AGES = "Our landlord takes ages to reply to emails."  # the scorer sees little in common


async def test_a_restatement_the_lexical_embedder_cannot_tell_is_asked_about(
    jkernel: MemoryKernel, judge: ResolvingJudge
) -> None:
    a = await add_fact(jkernel, A, SOLD_OUT, confidence=0.9)
    b = await add_fact(jkernel, A, GONE, confidence=0.7)
    c = await add_fact(jkernel, A, SLOW)
    d = await add_fact(jkernel, A, AGES)
    judge.add({"decision": "merge", "winner_id": str(a), "reason": "same observation"})
    report = await jkernel.consolidate(A)
    assert report.judge_calls == 1
    (asked,) = judge.requests
    assert isinstance(asked, ConflictRequest)  # what ``resolve`` received
    assert {f.id for f in asked.facts} == {a, b} and asked.kind is ConflictKind.MERGE
    assert asked.rule_reason.startswith("possible restatement")
    assert (await get(jkernel, A, b)).merged_into == a
    # Below the band the rules' answer stands: both kept, nothing asked.
    for fact in (c, d):
        assert (await get(jkernel, A, fact)).status is FactStatus.ACTIVE


async def test_without_a_judge_the_restatement_band_is_not_searched(kernel: MemoryKernel) -> None:
    a = await add_fact(kernel, A, SOLD_OUT)
    b = await add_fact(kernel, A, GONE)
    report = await kernel.consolidate(A)
    (run,) = report.agents
    assert run.ambiguous == 0 and run.candidate_pairs == 0 and report.judge_calls == 0
    for fact in (a, b):
        assert (await get(kernel, A, fact)).status is FactStatus.ACTIVE


STANDUP = "The team standup is at 9:30."
MOVED = "We moved standup to 10 because of the new hires."  # a new value, in other words


async def test_a_new_value_the_rules_leave_open_is_asked_about_and_superseded(
    jkernel: MemoryKernel, judge: ResolvingJudge, clock: FrozenClock
) -> None:
    old = await add_fact(jkernel, A, STANDUP)
    clock.advance(days=1)
    new = await add_fact(jkernel, A, MOVED)
    judge.add({"decision": "supersede", "winner_id": str(new), "reason": "moved to 10"})
    report = await jkernel.consolidate(A)
    requests: list[Any] = list(judge.requests)
    (asked,) = requests
    assert {f.id for f in asked.facts} == {old, new} and asked.kind is ConflictKind.CONFLICT
    assert asked.rule_reason.startswith("possible new value of the older fact's slot")
    assert report.count(Action.SUPERSEDED) == 1
    retired = await get(jkernel, A, old)
    assert retired.status is FactStatus.SUPERSEDED and retired.superseded_by == new


@pytest.mark.parametrize(
    "jkernel", [{"consolidation": {"judge_update_probability": None}}], indirect=True
)
async def test_the_update_band_can_be_off(jkernel: MemoryKernel, judge: ResolvingJudge) -> None:
    await add_fact(jkernel, A, STANDUP)
    await add_fact(jkernel, A, MOVED)
    report = await jkernel.consolidate(A)
    assert report.judge_calls == 0 and not judge.requests


async def test_without_a_judge_the_update_band_is_not_searched(kernel: MemoryKernel) -> None:
    a = await add_fact(kernel, A, STANDUP)
    b = await add_fact(kernel, A, MOVED)
    (run,) = (await kernel.consolidate(A)).agents
    assert run.ambiguous == 0 and run.candidate_pairs == 0
    for fact in (a, b):
        assert (await get(kernel, A, fact)).status is FactStatus.ACTIVE
