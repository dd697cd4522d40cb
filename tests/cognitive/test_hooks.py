"""pre_turn / post_turn against real Postgres: the seed's cases for the decision gate,
episode updates when no decision is recorded, dedup across turns and sessions, stats, and
post_turn atomicity (a failing write and a cancellation leave nothing half-written)."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from sqlalchemy import func, select

from memory_kernel import MemoryKernel, NotFoundError
from memory_kernel.models.enums import EventKind
from memory_kernel.models.turns import SkipReason, ToolResult, TurnContext, TurnInput, TurnOutcome
from memory_kernel.storage.tables import decisions, episodes, memory_events
from memory_kernel.testing import FakeEmbedder, FrozenClock

AGENT = "agent-1"
DECISION = (
    "We'll use PostgreSQL with pgvector rather than a separate vector database, because it "
    "keeps transactions and embeddings in one place."
)


def _turn(message: str = "How should we store embeddings?", *, session: str = "s1",
          frame: str | None = "decision") -> TurnInput:  # fmt: skip
    return TurnInput(agent_id=AGENT, session_id=session, message=message, frame=frame)


async def _run(
    kernel: MemoryKernel, turn: TurnInput, outcome: TurnOutcome
) -> tuple[TurnContext, object]:
    ctx = await kernel.pre_turn(turn)
    return ctx, await kernel.post_turn(ctx.turn, outcome)


async def _active_decisions(kernel: MemoryKernel) -> list[str]:
    async with kernel.database.connection() as conn:
        rows = await conn.execute(
            select(decisions.c.description)
            .where(decisions.c.agent_id == AGENT, decisions.c.active)
            .order_by(decisions.c.created_at)
        )
        return [r.description for r in rows]


async def _turns(kernel: MemoryKernel, episode_id: uuid.UUID) -> int:
    episode = await kernel.heart.episodes.get(episode_id, agent_id=AGENT)
    return int(episode.metadata.get("turns", 0))


@pytest.mark.parametrize("frame", ["conversation", "question", "creative"])
async def test_non_decision_frames_record_nothing(kernel: MemoryKernel, frame: str) -> None:
    ctx, result = await _run(kernel, _turn(frame=frame), TurnOutcome(response_text=DECISION))
    assert ctx.turn.decision_id is None
    assert not ctx.report.deliberation_started
    assert result.decision is None  # type: ignore[attr-defined]
    assert result.skipped is SkipReason.NOT_DELIBERATED  # type: ignore[attr-defined]
    assert await _active_decisions(kernel) == []
    # The episode is still updated when no decision is recorded.
    assert await _turns(kernel, ctx.turn.episode_id) == 1


async def test_frame_defaults_never_deliberate(kernel: MemoryKernel) -> None:
    ctx = await kernel.pre_turn(_turn("What do you think?", frame=None))
    assert ctx.turn.frame == "question" and ctx.turn.decision_id is None


async def test_task_frame_records_only_through_record_decision(kernel: MemoryKernel) -> None:
    plain = TurnOutcome(response_text=DECISION)
    _, result = await _run(kernel, _turn(frame="task"), plain)
    assert await _active_decisions(kernel) == []
    tool = ToolResult(
        tool_name="record_decision",
        arguments={"description": DECISION, "confidence": 0.8, "stakes": "high"},
    )
    outcome = TurnOutcome(response_text="Done! Recorded it.", tool_results=[tool])
    _, result = await _run(kernel, _turn(frame="task"), outcome)
    assert [d.description for d in result.explicit] == [DECISION]  # type: ignore[attr-defined]
    assert result.explicit[0].confidence == 0.8  # type: ignore[attr-defined]
    assert await _active_decisions(kernel) == [DECISION]


async def test_record_decision_in_a_decision_frame_is_not_stored_twice(
    kernel: MemoryKernel,
) -> None:
    tool = ToolResult(tool_name="record_decision", arguments={"description": DECISION})
    ctx, result = await _run(
        kernel, _turn(), TurnOutcome(response_text=DECISION, tool_results=[tool])
    )
    assert result.skipped is SkipReason.EXPLICIT  # type: ignore[attr-defined]
    assert await _active_decisions(kernel) == [DECISION]
    assert ctx.turn.decision_id is not None
    abandoned = await kernel.brain.get(ctx.turn.decision_id, agent_id=AGENT)
    assert abandoned.rejection_reason == "explicit: record_decision"


async def test_status_dump_in_a_decision_frame_is_filtered(kernel: MemoryKernel) -> None:
    outcome = TurnOutcome(response_text="Here's my full live status: 3 tasks open, 2 blocked.")
    ctx, result = await _run(kernel, _turn("Show me your current status"), outcome)
    assert ctx.turn.decision_id is not None
    assert result.skipped is SkipReason.INFORMATIONAL  # type: ignore[attr-defined]
    assert result.layer == 1  # type: ignore[attr-defined]
    assert await _active_decisions(kernel) == []
    stored = await kernel.brain.get(ctx.turn.decision_id, agent_id=AGENT)
    assert stored.rejection_reason == "informational: status"
    assert await _turns(kernel, ctx.turn.episode_id) == 1
    assert kernel.stats().informational.reasons == {"status": 1}


async def test_real_decision_is_recorded(kernel: MemoryKernel) -> None:
    outcome = TurnOutcome(response_text=DECISION + "\n\nWe already operate Postgres.")
    ctx, result = await _run(kernel, _turn(frame="debug"), outcome)
    decision = result.decision  # type: ignore[attr-defined]
    assert decision is not None and decision.id == ctx.turn.decision_id
    assert decision.description == DECISION
    assert decision.reasoning == "We already operate Postgres."
    assert decision.frame == "debug" and decision.episode_id == ctx.turn.episode_id
    assert decision.finalized and decision.active
    assert await _turns(kernel, ctx.turn.episode_id) == 1
    stats = kernel.stats()
    assert (stats.turns, stats.deliberations_started, stats.recorded) == (1, 1, 1)


async def test_quality_gate_rejects_through_post_turn(kernel: MemoryKernel) -> None:
    # Layer 1 finds the response a decision; layer 3 judges the description the host gave.
    outcome = TurnOutcome(
        response_text=DECISION, decision_description="Sure, I can help with that."
    )
    ctx, result = await _run(kernel, _turn(), outcome)
    assert result.skipped is SkipReason.QUALITY_GATE  # type: ignore[attr-defined]
    assert result.layer == 3 and result.reason == "chat_prefix"  # type: ignore[attr-defined]
    assert kernel.stats().quality_gate.reasons == {"chat_prefix": 1}
    assert await _turns(kernel, ctx.turn.episode_id) == 1


async def test_chat_only_response_stops_at_layer_1(kernel: MemoryKernel) -> None:
    outcome = TurnOutcome(response_text="Sure, I can help with that.")
    _, result = await _run(kernel, _turn(), outcome)
    assert result.skipped is SkipReason.INFORMATIONAL  # type: ignore[attr-defined]
    assert result.reason == "acknowledgement"  # type: ignore[attr-defined]


async def test_recommendation_opening_like_chat_is_recorded(kernel: MemoryKernel) -> None:
    text = (
        "Here's my recommendation: use Redis for the session cache rather than Memcached, "
        "because we already run it and it expires keys natively."
    )
    _, result = await _run(kernel, _turn(), TurnOutcome(response_text=text))
    assert result.decision is not None  # type: ignore[attr-defined]


async def test_tool_errors_exempt_the_placeholder_confidence(kernel: MemoryKernel) -> None:
    """A high-stakes turn without a stated confidence is rejected as a placeholder, unless
    its tool calls errored: then the gate rates it (0.6-0.8) and it is recorded."""
    high = TurnInput(
        agent_id=AGENT, session_id="s1", message="Deploy failed, what now?",
        frame="decision", signals={"stakes": "high"},
    )  # fmt: skip
    rollback = (
        "We'll roll back to 2.14.3 instead of patching forward, because the migration "
        "failed halfway and the old schema is still intact."
    )
    _, plain = await _run(kernel, high, TurnOutcome(response_text=rollback))
    assert plain.reason == "placeholder_confidence"  # type: ignore[attr-defined]
    failed = ToolResult(tool_name="kubectl", output="error: timed out", is_error=True)
    errored = TurnOutcome(response_text=rollback, tool_results=[failed])
    _, result = await _run(kernel, high.model_copy(update={"session_id": "s2"}), errored)
    decision = result.decision  # type: ignore[attr-defined]
    assert decision is not None and 0.6 <= decision.confidence <= 0.8


async def test_five_near_identical_turns_in_one_session_record_one(kernel: MemoryKernel) -> None:
    variants = [DECISION, DECISION.lower(), DECISION.replace("We'll", "We will"),
                DECISION.replace("one place", "a single place"), DECISION + " Agreed."]  # fmt: skip
    recorded = []
    for text in variants:
        _, result = await _run(kernel, _turn(), TurnOutcome(response_text=text))
        recorded.append(result.decision is not None)  # type: ignore[attr-defined]
    assert recorded == [True, False, False, False, False]
    assert len(await _active_decisions(kernel)) == 1
    assert kernel.stats().duplicate.rejected == 4


async def test_same_decision_in_two_sessions_is_recorded_twice(kernel: MemoryKernel) -> None:
    for session in ("s1", "s2"):
        _, result = await _run(kernel, _turn(session=session), TurnOutcome(response_text=DECISION))
        assert result.decision is not None  # type: ignore[attr-defined]
    assert len(await _active_decisions(kernel)) == 2


async def test_same_decision_outside_the_window_is_recorded(
    kernel: MemoryKernel, clock: FrozenClock
) -> None:
    await _run(kernel, _turn(), TurnOutcome(response_text=DECISION))
    clock.advance(minutes=5, seconds=1)
    _, result = await _run(kernel, _turn(), TurnOutcome(response_text=DECISION))
    assert result.decision is not None  # type: ignore[attr-defined]


async def test_duplicate_start_is_reported_and_skipped(kernel: MemoryKernel) -> None:
    first = await kernel.pre_turn(_turn())
    second = await kernel.pre_turn(_turn())
    assert first.turn.decision_id is not None
    assert second.turn.decision_id is None and second.turn.duplicate_of == first.turn.decision_id
    result = await kernel.post_turn(second.turn, TurnOutcome(response_text=DECISION))
    assert result.skipped is SkipReason.DUPLICATE and result.layer == 2


async def test_concurrent_pre_turns_start_one_deliberation(kernel: MemoryKernel) -> None:
    contexts = await asyncio.gather(*(kernel.pre_turn(_turn()) for _ in range(5)))
    assert sum(c.turn.decision_id is not None for c in contexts) == 1


async def test_works_without_embedder(kernel: MemoryKernel, embedder: FakeEmbedder) -> None:
    embedder.fail = RuntimeError("down")
    _, first = await _run(kernel, _turn(), TurnOutcome(response_text=DECISION))
    _, second = await _run(kernel, _turn(), TurnOutcome(response_text=DECISION))
    assert first.decision is not None  # type: ignore[attr-defined]
    assert second.skipped is SkipReason.DUPLICATE  # type: ignore[attr-defined]


async def _counts(kernel: MemoryKernel) -> tuple[int, int, int]:
    async with kernel.database.connection() as conn:
        finalized = await conn.scalar(
            select(func.count()).where(decisions.c.agent_id == AGENT, decisions.c.finalized)
        )
        events = await conn.scalar(select(func.count()).where(memory_events.c.agent_id == AGENT))
        turns = await conn.scalar(
            select(func.coalesce(func.sum(episodes.c.metadata["turns"].as_integer()), 0)).where(
                episodes.c.agent_id == AGENT
            )
        )
    return int(finalized or 0), int(events or 0), int(turns or 0)


def _busy_outcome() -> TurnOutcome:
    other = "Pin numpy below 3.0 until our dependencies publish compatible wheels, since two lag."
    tool = ToolResult(tool_name="record_decision", arguments={"description": other})
    return TurnOutcome(response_text=DECISION, tool_results=[tool])


async def test_post_turn_is_atomic_when_a_write_fails(kernel: MemoryKernel) -> None:
    ctx = await kernel.pre_turn(_turn())
    before = await _counts(kernel)
    broken = ctx.turn.model_copy(update={"episode_id": uuid.uuid4()})
    with pytest.raises(NotFoundError):
        await kernel.post_turn(broken, _busy_outcome())
    assert await _counts(kernel) == before
    assert kernel.stats().turns == 0 and kernel.stats().recorded_explicit == 0
    # The real handle still works afterwards.
    result = await kernel.post_turn(ctx.turn, TurnOutcome(response_text=DECISION))
    assert result.decision is not None


async def test_cancelled_post_turn_leaves_nothing_half_written(kernel: MemoryKernel) -> None:
    ctx = await kernel.pre_turn(_turn())
    before = await _counts(kernel)
    # Hold the episode row so post_turn blocks on its last write, after the others.
    async with kernel.database.transaction() as blocker:
        await blocker.execute(
            select(episodes.c.id)
            .where(episodes.c.agent_id == AGENT, episodes.c.id == ctx.turn.episode_id)
            .with_for_update()
        )
        task = asyncio.create_task(kernel.post_turn(ctx.turn, _busy_outcome()))
        blocked = False
        for _ in range(500):
            await asyncio.sleep(0.02)
            blocked = await _waiting_on_lock(kernel)
            if blocked:
                break
        assert blocked, "post_turn should be waiting on the episode row"
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert await _counts(kernel) == before
    decision = await kernel.brain.get(ctx.turn.decision_id, agent_id=AGENT)  # type: ignore[arg-type]
    assert decision.active and not decision.finalized


async def _waiting_on_lock(kernel: MemoryKernel) -> bool:
    from sqlalchemy import text

    async with kernel.database.connection() as conn:
        waiting = await conn.scalar(
            text(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                " AND application_name = 'memory-kernel' AND datname = current_database()"
            )
        )
    return bool(waiting)


async def test_events_tell_the_story(kernel: MemoryKernel) -> None:
    ctx, result = await _run(kernel, _turn(), TurnOutcome(response_text=DECISION))
    async with kernel.database.connection() as conn:
        rows = (
            await conn.execute(
                select(memory_events.c.event, memory_events.c.details).where(
                    memory_events.c.agent_id == AGENT,
                    memory_events.c.memory_id == ctx.turn.decision_id,
                )
            )
        ).all()
        assert {r.event for r in rows} == {
            EventKind.DECISION_STARTED,
            EventKind.DECISION_FINALIZED,
            EventKind.CONFIDENCE_CHANGED,  # the gate's confidence replaced the placeholder
        }
        (changed,) = [r.details for r in rows if r.event == EventKind.CONFIDENCE_CHANGED]
        assert changed["from"] == 0.5
        assert changed["to"] == result.decision.confidence  # type: ignore[attr-defined]
        assert 0.0 <= changed["quality"] <= 1.0
