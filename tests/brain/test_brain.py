"""Brain against real Postgres: record, deliberation start (layer 2) and finalize (layer 3)."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from sqlalchemy import select

from memory_kernel import MemoryKernel, NotFoundError, ValidationError
from memory_kernel.brain.gate import confidence_from_quality, quality_score
from memory_kernel.models.decisions import DecisionInput
from memory_kernel.models.enums import EventKind, Stakes
from memory_kernel.storage.tables import decisions, memory_events
from memory_kernel.testing import FakeEmbedder, FrozenClock

AGENT = "agent-1"
NEAR_IDENTICAL = [
    "Cache user profiles in Redis for ten minutes to meet the latency budget.",
    "Cache the user profiles in Redis for ten minutes to meet the latency budget.",
    "Cache user profiles in Redis for ten minutes to meet our latency budget.",
    "cache user profiles in redis for ten minutes, to meet the latency budget",
    "Cache user profiles in Redis for 10 minutes to meet the latency budget.",
]
OTHER = "Pin numpy below 3.0 until our dependencies publish compatible wheels."


async def _events(kernel: MemoryKernel, decision_id: uuid.UUID) -> list[str]:
    async with kernel.database.connection() as conn:
        rows = await conn.execute(
            select(memory_events.c.event)
            .where(memory_events.c.agent_id == AGENT, memory_events.c.memory_id == decision_id)
            .order_by(memory_events.c.created_at, memory_events.c.event)
        )
        return [r.event for r in rows]


async def _active_count(kernel: MemoryKernel) -> int:
    async with kernel.database.connection() as conn:
        rows = await conn.execute(
            select(decisions.c.id).where(decisions.c.agent_id == AGENT, decisions.c.active)
        )
        return len(rows.all())


async def test_record_bypasses_every_filter(kernel: MemoryKernel) -> None:
    # Short, chatty and a repeat: the explicit path stores it anyway.
    for _ in range(2):
        stored = await kernel.brain.record(
            DecisionInput(agent_id=AGENT, session_id="s1", description="Sure, ok.")
        )
        assert stored.active and stored.finalized
    assert await _active_count(kernel) == 2
    assert await _events(kernel, stored.id) == [EventKind.DECISION_RECORDED]
    assert kernel.brain.counters.snapshot().recorded_explicit == 2


def test_decision_input_rejects_bad_values() -> None:
    with pytest.raises(ValidationError):
        DecisionInput(agent_id=AGENT, session_id="s1", description="   ")
    with pytest.raises(ValidationError):
        DecisionInput(agent_id=AGENT, session_id="s1", description="x", confidence=1.5)
    with pytest.raises(ValidationError):
        DecisionInput(agent_id="bad id", session_id="s1", description="x")


async def test_start_then_finalize_persists(kernel: MemoryKernel) -> None:
    decision_id = await kernel.brain.start(AGENT, "s1", "Which cache should we use?")
    assert decision_id is not None
    started = await kernel.brain.get(decision_id, agent_id=AGENT)
    assert started.active and not started.finalized and started.confidence == 0.5
    final = await kernel.brain.finalize(
        decision_id, agent_id=AGENT, description=NEAR_IDENTICAL[0], confidence=0.8
    )
    assert final is not None
    assert final.finalized and final.description == NEAR_IDENTICAL[0]
    assert await _events(kernel, decision_id) == [
        EventKind.CONFIDENCE_CHANGED,
        EventKind.DECISION_FINALIZED,
        EventKind.DECISION_STARTED,
    ]
    # Finalizing twice returns the stored decision unchanged.
    assert await kernel.brain.finalize(decision_id, agent_id=AGENT) == final


async def test_five_near_identical_starts_in_one_session_make_one(kernel: MemoryKernel) -> None:
    ids = [await kernel.brain.start(AGENT, "s1", text) for text in NEAR_IDENTICAL]
    assert ids[0] is not None
    assert ids[1:] == [None] * 4
    assert await _active_count(kernel) == 1
    stats = kernel.brain.counters.snapshot()
    assert stats.duplicate.rejected == 4
    assert stats.duplicate.reasons == {"cosine": 4}


async def test_distinct_decisions_are_all_kept(kernel: MemoryKernel) -> None:
    assert await kernel.brain.start(AGENT, "s1", NEAR_IDENTICAL[0]) is not None
    assert await kernel.brain.start(AGENT, "s1", OTHER) is not None


async def test_same_text_in_two_sessions_is_recorded_twice(kernel: MemoryKernel) -> None:
    assert await kernel.brain.start(AGENT, "s1", NEAR_IDENTICAL[0]) is not None
    assert await kernel.brain.start(AGENT, "s2", NEAR_IDENTICAL[0]) is not None
    assert await kernel.brain.start("agent-2", "s1", NEAR_IDENTICAL[0]) is not None


async def test_outside_the_window_is_recorded(kernel: MemoryKernel, clock: FrozenClock) -> None:
    assert await kernel.brain.start(AGENT, "s1", NEAR_IDENTICAL[0]) is not None
    clock.advance(minutes=4, seconds=59)
    assert await kernel.brain.start(AGENT, "s1", NEAR_IDENTICAL[1]) is None
    clock.advance(seconds=2)
    assert await kernel.brain.start(AGENT, "s1", NEAR_IDENTICAL[1]) is not None


async def test_rejected_decisions_do_not_suppress_new_ones(kernel: MemoryKernel) -> None:
    first = await kernel.brain.start(AGENT, "s1", NEAR_IDENTICAL[0])
    assert first is not None
    assert await kernel.brain.finalize(first, agent_id=AGENT, description="Okay.") is None
    assert await kernel.brain.start(AGENT, "s1", NEAR_IDENTICAL[1]) is not None


async def test_keyword_fallback_without_embedder(
    kernel: MemoryKernel, embedder: FakeEmbedder
) -> None:
    embedder.fail = RuntimeError("embedder down")
    assert await kernel.brain.start(AGENT, "s1", NEAR_IDENTICAL[0]) is not None
    assert await kernel.brain.start(AGENT, "s1", NEAR_IDENTICAL[1]) is None
    assert await kernel.brain.start(AGENT, "s1", OTHER) is not None
    async with kernel.database.connection() as conn:
        vectors = (
            await conn.execute(select(decisions.c.embedding).where(decisions.c.agent_id == AGENT))
        ).scalars()
        assert all(v is None for v in vectors)
    assert kernel.brain.counters.snapshot().duplicate.reasons == {"keyword": 1}
    # Back online: the new vector is compared with the vector-less rows by keywords.
    embedder.fail = None
    assert await kernel.brain.start(AGENT, "s1", NEAR_IDENTICAL[2]) is None


async def test_concurrent_duplicate_starts_make_one(kernel: MemoryKernel) -> None:
    results = await asyncio.gather(
        *(kernel.brain.start(AGENT, "s1", text) for text in NEAR_IDENTICAL)
    )
    assert sum(r is not None for r in results) == 1
    assert await _active_count(kernel) == 1


@pytest.mark.parametrize(
    ("description", "stakes", "reason"),
    [
        ("Too short.", Stakes.MEDIUM, "quality_gate: too_short"),
        (NEAR_IDENTICAL[0], Stakes.HIGH, "quality_gate: placeholder_confidence"),
        (NEAR_IDENTICAL[0], Stakes.CRITICAL, "quality_gate: placeholder_confidence"),
        ("Done! Cache user profiles in Redis.", Stakes.MEDIUM, "quality_gate: chat_prefix"),
        (
            "Sorry, I encountered an error processing your request.",
            Stakes.MEDIUM,
            "quality_gate: error_template",
        ),
    ],
)
async def test_each_gate_rule_soft_deletes(
    kernel: MemoryKernel, description: str, stakes: Stakes, reason: str
) -> None:
    decision_id = await kernel.brain.start(AGENT, "s1", "What now?", stakes=stakes)
    assert decision_id is not None
    assert await kernel.brain.finalize(decision_id, agent_id=AGENT, description=description) is None
    stored = await kernel.brain.get(decision_id, agent_id=AGENT)
    assert not stored.active
    assert stored.rejection_reason == reason
    assert EventKind.REJECTED in await _events(kernel, decision_id)
    assert kernel.brain.counters.snapshot().quality_gate.reasons == {reason.split(": ")[1]: 1}
    # A rejected deliberation stays rejected.
    assert await kernel.brain.finalize(decision_id, agent_id=AGENT, description=OTHER) is None


async def test_high_stakes_with_real_confidence_passes(kernel: MemoryKernel) -> None:
    decision_id = await kernel.brain.start(AGENT, "s1", "Pick a cache", stakes="high")
    assert decision_id is not None
    final = await kernel.brain.finalize(
        decision_id, agent_id=AGENT, description=NEAR_IDENTICAL[0], confidence=0.9
    )
    assert final is not None and final.stakes is Stakes.HIGH and final.active


async def test_finalize_dedups_the_final_text(kernel: MemoryKernel) -> None:
    await kernel.brain.record(
        DecisionInput(agent_id=AGENT, session_id="s1", description=NEAR_IDENTICAL[0])
    )
    decision_id = await kernel.brain.start(AGENT, "s1", "Latency is too high, what now?")
    assert decision_id is not None
    assert (
        await kernel.brain.finalize(decision_id, agent_id=AGENT, description=NEAR_IDENTICAL[1])
        is None
    )
    stored = await kernel.brain.get(decision_id, agent_id=AGENT)
    assert stored.rejection_reason == "duplicate: cosine"


async def test_ids_are_scoped_by_agent(kernel: MemoryKernel) -> None:
    decision_id = await kernel.brain.start(AGENT, "s1", NEAR_IDENTICAL[0])
    assert decision_id is not None
    with pytest.raises(NotFoundError):
        await kernel.brain.get(decision_id, agent_id="someone-else")
    with pytest.raises(NotFoundError):
        await kernel.brain.finalize(decision_id, agent_id="someone-else")


async def test_get_recent_decisions(kernel: MemoryKernel, clock: FrozenClock) -> None:
    since = clock.now()
    first = await kernel.brain.start(AGENT, "s1", NEAR_IDENTICAL[0])
    clock.advance(seconds=1)
    second = await kernel.brain.start(AGENT, "s2", OTHER)
    recent = await kernel.brain.get_recent_decisions(AGENT, since - clock.now().resolution)
    assert [d.id for d in recent] == [second, first]
    only_s1 = await kernel.brain.get_recent_decisions(
        AGENT, since - clock.now().resolution, session_id="s1"
    )
    assert [d.id for d in only_s1] == [first]
    with pytest.raises(ValidationError):
        await kernel.brain.get_recent_decisions(AGENT, since, limit=0)


async def test_bad_input_writes_nothing(kernel: MemoryKernel) -> None:
    with pytest.raises(ValidationError):
        await kernel.brain.start(AGENT, "s1", "\x00 bad")
    with pytest.raises(ValidationError):
        await kernel.brain.start(AGENT, "s1", NEAR_IDENTICAL[0], stakes="enormous")
    assert await _active_count(kernel) == 0


# --- the confidence of a decision nobody rated -------------------------------------------


async def test_finalize_without_confidence_takes_the_gates_quality(kernel: MemoryKernel) -> None:
    decision_id = await kernel.brain.start(AGENT, "s1", "How do we meet the latency budget?")
    assert decision_id is not None
    final = await kernel.brain.finalize(decision_id, agent_id=AGENT, description=OTHER)
    assert final is not None
    expected = confidence_from_quality(
        quality_score(OTHER, reasoning=None, min_chars=kernel.config.brain.min_description_chars)
    )
    assert final.confidence == pytest.approx(expected)
    assert final.confidence > kernel.config.context.passive_min_confidence
    assert (await kernel.brain.get(decision_id, agent_id=AGENT)).confidence == final.confidence
    assert EventKind.CONFIDENCE_CHANGED in await _events(kernel, decision_id)


@pytest.mark.parametrize("given", [0.5, 0.35, 0.95])
async def test_a_given_confidence_always_wins(kernel: MemoryKernel, given: float) -> None:
    decision_id = await kernel.brain.start(AGENT, "s1", "How do we meet the latency budget?")
    assert decision_id is not None
    final = await kernel.brain.finalize(
        decision_id, agent_id=AGENT, description=OTHER, confidence=given
    )
    assert final is not None and final.confidence == given


async def test_explicit_records_keep_their_own_confidence(kernel: MemoryKernel) -> None:
    # The record_decision path stores what the agent said, placeholder included: no gate ran.
    stored = await kernel.brain.record(
        DecisionInput(agent_id=AGENT, session_id="s1", description=OTHER)
    )
    assert stored.confidence == 0.5
