"""post_turn records a TurnHandle once (docs/integration.md, "Retrying post_turn").

Before (issue 23): the same handle posted twice — a retry after a timeout whose commit went
through, a re-run LangGraph node, a queue delivering twice — recorded its explicit decisions
again and counted the turn again: 5 concurrent posts stored 5 decisions.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta

import pytest
from sqlalchemy import func, select

from memory_kernel import ConflictError, ConsolidationAction, MemoryKernel
from memory_kernel.models.turns import TurnHandle, TurnInput, TurnOutcome, TurnResult
from memory_kernel.storage.tables import decisions, turn_results
from memory_kernel.testing import FrozenClock
from tests.fuzz.checks import digest

AGENT = "agent-once"


def _outcome() -> TurnOutcome:
    return TurnOutcome.model_validate(
        {
            "response_text": "We'll use PostgreSQL with pgvector, because it keeps one store.",
            "tool_results": [
                {"tool_name": "record_decision",
                 "arguments": {"description": "Keep the nightly backup window at 02:00"}},
            ],
        }
    )  # fmt: skip


async def _handle(kernel: MemoryKernel, session: str, frame: str = "decision") -> TurnHandle:
    ctx = await kernel.pre_turn(
        TurnInput(agent_id=AGENT, session_id=session, message="How do we store it?", frame=frame)
    )
    return ctx.turn


async def _decisions(kernel: MemoryKernel, session: str) -> int:
    """Recorded (finalized, active) decisions of the session."""
    async with kernel.database.connection() as conn:
        stmt = select(func.count()).where(
            decisions.c.agent_id == AGENT, decisions.c.session_id == session,
            decisions.c.active, decisions.c.finalized,
        )  # fmt: skip
        return int(await conn.scalar(stmt) or 0)


async def _turns(kernel: MemoryKernel, handle: TurnHandle) -> int:
    episode = await kernel.heart.episodes.get(handle.episode_id, agent_id=AGENT)
    return int(episode.metadata.get("turns", 0))


async def test_five_concurrent_posts_of_one_handle_record_it_once(kernel: MemoryKernel) -> None:
    handle = await _handle(kernel, "concurrent")
    counted = kernel.stats().turns
    results = await asyncio.gather(*(kernel.post_turn(handle, _outcome()) for _ in range(5)))
    assert len(results[0].explicit) == 1
    assert all(r == results[0] for r in results)
    # One explicit decision; the deliberation was abandoned for it (not stored twice).
    assert await _decisions(kernel, "concurrent") == 1
    assert await _turns(kernel, handle) == 1
    assert kernel.stats().turns == counted + 1


@pytest.mark.parametrize("frame", ["decision", "conversation"])
async def test_a_repeated_post_returns_the_first_result_and_writes_nothing(
    kernel: MemoryKernel, frame: str
) -> None:
    handle = await _handle(kernel, f"repeat-{frame}", frame)
    first = await kernel.post_turn(handle, _outcome())
    before, counted = await digest(kernel), kernel.stats()
    # Again, from a checkpoint (the handle rebuilt from JSON), even with another outcome.
    rebuilt = TurnHandle.model_validate_json(handle.model_dump_json())
    again = await kernel.post_turn(rebuilt, TurnOutcome(response_text="Something else."))
    assert again == first
    assert await digest(kernel) == before
    assert kernel.stats() == counted


async def test_an_old_checkpoint_without_a_turn_id_is_one_turn(kernel: MemoryKernel) -> None:
    """A handle stored before turn ids existed gets one derived from its fields: every
    rebuild of that checkpoint is the same turn; another turn is another."""
    handle = await _handle(kernel, "old-checkpoint")
    wire = handle.model_dump(mode="json")
    del wire["turn_id"]
    rebuilt, rebuilt_again = TurnHandle.model_validate(wire), TurnHandle.model_validate(wire)
    assert rebuilt.turn_id == rebuilt_again.turn_id != handle.turn_id
    first = await kernel.post_turn(rebuilt, _outcome())
    assert await kernel.post_turn(rebuilt_again, _outcome()) == first
    assert await _decisions(kernel, "old-checkpoint") == 1
    other = await _handle(kernel, "old-checkpoint-2")
    assert other.turn_id != handle.turn_id


async def test_a_post_that_rolled_back_leaves_no_claim(kernel: MemoryKernel) -> None:
    handle = await _handle(kernel, "rolled-back")

    class Abort(Exception):
        pass

    async def post_then_abort() -> None:
        # The post joins this unit; the unit rolls back, claim included.
        async with kernel.database.transaction():
            await kernel.post_turn(handle, _outcome())
            raise Abort

    with pytest.raises(Abort):
        await post_then_abort()
    assert await _decisions(kernel, "rolled-back") == 0
    result = await kernel.post_turn(handle, _outcome())
    assert len(result.explicit) == 1 and await _decisions(kernel, "rolled-back") == 1


async def test_turn_ids_are_per_agent(kernel: MemoryKernel) -> None:
    """The same turn id under another agent is another turn (the key includes the agent)."""
    handle = await _handle(kernel, "per-agent")
    first = await kernel.post_turn(handle, _outcome())
    ctx = await kernel.pre_turn(
        TurnInput(agent_id="agent-other", session_id="s", message="How?", frame="decision")
    )
    theirs = ctx.turn.model_copy(update={"turn_id": handle.turn_id})
    result = await kernel.post_turn(theirs, _outcome())
    assert isinstance(result, TurnResult) and result != first
    assert result.episode_id == ctx.turn.episode_id
    assert uuid.UUID(str(handle.turn_id)) == theirs.turn_id


async def test_results_are_kept_for_the_retention_then_pruned_and_old_handles_refused(
    kernel: MemoryKernel, clock: FrozenClock
) -> None:
    """Nothing pruned ``turn_results`` (issue 23's known gap). Now consolidate forgets results
    older than ``turn_results_days`` (30) and post_turn refuses such old handles, so a repeat
    can never record a turn twice."""
    handle = await _handle(kernel, "retention")
    first = await kernel.post_turn(handle, _outcome())
    clock.advance(timedelta(days=29))
    await kernel.consolidate(AGENT)
    assert await kernel.post_turn(handle, _outcome()) == first  # still remembered
    assert await _results(kernel) == 1
    clock.advance(timedelta(days=2))
    late = await _handle(kernel, "retention-late")  # begun now: recorded normally
    report = await kernel.consolidate(AGENT)
    assert report.agents[0].counts.get(ConsolidationAction.TURN_RESULTS_PRUNED) == 1
    assert await _results(kernel) == 0
    before = await digest(kernel)
    with pytest.raises(ConflictError, match="turn_results_days"):
        await kernel.post_turn(handle, _outcome())
    assert await digest(kernel) == before  # refused before any write
    assert len((await kernel.post_turn(late, _outcome())).explicit) == 1


async def _results(kernel: MemoryKernel) -> int:
    async with kernel.database.connection() as conn:
        stmt = select(func.count()).where(turn_results.c.agent_id == AGENT)
        return int(await conn.scalar(stmt) or 0)
