"""Decision outcomes against real Postgres: record_outcome, its audit, its refusals, layer 2
keeping a success and a failure of the same action apart, recall showing both, and the
outcomes a turn reports through post_turn (atomic with the turn)."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import select

from memory_kernel import (
    DecisionOutcome,
    MemoryKernel,
    NotFoundError,
    OutcomeReport,
    ValidationError,
)
from memory_kernel.models.decisions import Decision, DecisionInput
from memory_kernel.models.enums import EventKind
from memory_kernel.models.turns import TurnInput, TurnOutcome
from memory_kernel.storage.tables import decisions, memory_events
from memory_kernel.testing import FrozenClock

AGENT = "agent-1"
DEPLOY = "Deploy service to production"


async def _decided(kernel: MemoryKernel, text: str = DEPLOY, session: str = "s1") -> Decision:
    started = await kernel.brain.start(AGENT, session, text)
    assert started is not None
    decision = await kernel.brain.finalize(started, agent_id=AGENT, confidence=0.8)
    assert decision is not None
    return decision


async def _outcome_events(
    kernel: MemoryKernel, decision_id: uuid.UUID
) -> list[tuple[str | None, dict[str, object], str]]:
    async with kernel.database.connection() as conn:
        rows = await conn.execute(
            select(memory_events.c.reason, memory_events.c.details, memory_events.c.decided_by)
            .where(
                memory_events.c.agent_id == AGENT,
                memory_events.c.memory_id == decision_id,
                memory_events.c.event == EventKind.DECISION_OUTCOME.value,
            )
            .order_by(memory_events.c.created_at)
        )
        return [(r.reason, r.details, r.decided_by) for r in rows]


async def test_record_outcome_stores_and_audits(kernel: MemoryKernel, clock: FrozenClock) -> None:
    decision = await _decided(kernel)
    assert decision.outcome is None
    clock.advance(minutes=1)
    done = await kernel.brain.record_outcome(
        decision.id, agent_id=AGENT, outcome="success", note="all pods healthy"
    )
    assert done.outcome is DecisionOutcome.SUCCESS and done.updated_at > decision.updated_at
    assert (await kernel.brain.get(decision.id, agent_id=AGENT)).outcome == "success"
    changed = await kernel.brain.record_outcome(
        decision.id, agent_id=AGENT, outcome=DecisionOutcome.PARTIAL
    )
    assert changed.outcome is DecisionOutcome.PARTIAL
    assert await _outcome_events(kernel, decision.id) == [
        ("all pods healthy", {"outcome": "success", "from": None}, "caller"),
        (None, {"outcome": "partial", "from": "success"}, "caller"),
    ]
    # The same outcome again without a note changes nothing; with a note it is kept.
    await kernel.brain.record_outcome(decision.id, agent_id=AGENT, outcome="partial")
    assert len(await _outcome_events(kernel, decision.id)) == 2
    await kernel.brain.record_outcome(
        decision.id, agent_id=AGENT, outcome="partial", note="one region lagging"
    )
    assert len(await _outcome_events(kernel, decision.id)) == 3


async def test_refusals_write_nothing(kernel: MemoryKernel) -> None:
    decision = await _decided(kernel)
    with pytest.raises(ValidationError):
        await kernel.brain.record_outcome(decision.id, agent_id=AGENT, outcome="great")
    with pytest.raises(NotFoundError):
        await kernel.brain.record_outcome(uuid.uuid4(), agent_id=AGENT, outcome="success")
    with pytest.raises(NotFoundError):  # another agent's decision is not there for it
        await kernel.brain.record_outcome(decision.id, agent_id="agent-2", outcome="success")
    deliberating = await kernel.brain.start(AGENT, "s2", "Move the cron jobs to Kubernetes")
    assert deliberating is not None
    with pytest.raises(ValidationError, match="still deliberating"):
        await kernel.brain.record_outcome(deliberating, agent_id=AGENT, outcome="success")
    rejected = await kernel.brain.start(AGENT, "s3", "Pin the base image to a digest")
    assert rejected is not None
    assert await kernel.brain.finalize(rejected, agent_id=AGENT, description="Done!") is None
    with pytest.raises(ValidationError, match="rejected"):
        await kernel.brain.record_outcome(rejected, agent_id=AGENT, outcome="failure")
    assert (await kernel.brain.get(decision.id, agent_id=AGENT)).outcome is None
    assert await _outcome_events(kernel, decision.id) == []


async def test_a_success_and_a_failure_of_the_same_action_stay_apart(
    kernel: MemoryKernel, clock: FrozenClock
) -> None:
    first = await _decided(kernel)
    clock.advance(seconds=30)
    # Still pending: the same decision again is a duplicate (layer 2).
    assert await kernel.brain.start(AGENT, "s1", DEPLOY) is None
    await kernel.brain.record_outcome(first.id, agent_id=AGENT, outcome="success")
    clock.advance(seconds=30)
    # Closed by its outcome: deciding it again is a new attempt.
    second = await _decided(kernel)
    await kernel.brain.record_outcome(
        second.id, agent_id=AGENT, outcome="failure", note="migration timed out"
    )
    async with kernel.database.connection() as conn:
        rows = await conn.execute(
            select(decisions.c.outcome).where(decisions.c.agent_id == AGENT, decisions.c.active)
        )
        assert sorted(r.outcome for r in rows) == ["failure", "success"]
    # Recall shows both, each with its outcome.
    clock.advance(minutes=5)
    ctx = await kernel.pre_turn(
        TurnInput(
            agent_id=AGENT, session_id="s9", frame="question",
            message="How did deploying the service to production go?",
        )
    )  # fmt: skip
    section = ctx.text.split("## Related decisions", 1)[1]
    assert f"[success] {DEPLOY}" in section and f"[failure] {DEPLOY}" in section


async def test_a_decision_recorded_after_the_fact_may_carry_its_outcome(
    kernel: MemoryKernel,
) -> None:
    stored = await kernel.brain.record(
        DecisionInput(agent_id=AGENT, session_id="s1", description=DEPLOY, outcome="failure")
    )
    assert stored.outcome is DecisionOutcome.FAILURE


async def test_post_turn_records_reported_outcomes_in_the_turns_unit(
    kernel: MemoryKernel,
) -> None:
    decision = await _decided(kernel)
    turn = TurnInput(agent_id=AGENT, session_id="s2", message="The deploy is done.", frame="task")
    ctx = await kernel.pre_turn(turn)
    report = OutcomeReport(decision_id=decision.id, outcome="success", note="green")
    await kernel.post_turn(
        ctx.turn, TurnOutcome(response_text="Deployed.", decision_outcomes=[report])
    )
    assert (await kernel.brain.get(decision.id, agent_id=AGENT)).outcome == "success"
    # One unknown decision fails the whole turn: nothing of it is written.
    ctx = await kernel.pre_turn(turn)
    reports = [
        OutcomeReport(decision_id=decision.id, outcome="failure"),
        OutcomeReport(decision_id=uuid.uuid4(), outcome="failure"),
    ]
    with pytest.raises(NotFoundError):
        await kernel.post_turn(
            ctx.turn, TurnOutcome(response_text="Rolled back.", decision_outcomes=reports)
        )
    assert (await kernel.brain.get(decision.id, agent_id=AGENT)).outcome == "success"
    episode = await kernel.heart.episodes.get(ctx.turn.episode_id, agent_id=AGENT)
    assert episode.metadata.get("turns") == 1  # the failed turn was not counted


def test_outcome_report_validates() -> None:
    with pytest.raises(ValidationError):
        OutcomeReport(decision_id=uuid.uuid4(), outcome="meh")
    with pytest.raises(ValidationError):
        OutcomeReport(decision_id="not-a-uuid", outcome="success")
