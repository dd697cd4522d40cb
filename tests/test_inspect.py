"""``inspect``: counts, supersession chains, rejected decisions and persisted context
reports, on a real database — through the Python API and the CLI — plus the 0003
migration that lets ``memory_events`` hold context reports."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from sqlalchemy import func, select
from typer.testing import CliRunner

from memory_kernel import MemoryKernel, ValidationError
from memory_kernel.cli import app
from memory_kernel.inspection import AgentInspection, DecisionState, inspect_agent
from memory_kernel.models.enums import DecidedBy, EventKind, FactStatus, MemoryKind
from memory_kernel.models.facts import FactInput
from memory_kernel.models.turns import (
    SkipReason,
    TurnContext,
    TurnHandle,
    TurnInput,
    TurnOutcome,
)
from memory_kernel.storage import migrate
from memory_kernel.storage.events import Event, write_events
from memory_kernel.storage.tables import memory_events
from memory_kernel.testing import FrozenClock

AGENT = "agent-inspect"
DEPLOYS = ("Deploys happen on Fridays", "Deploys happen on Thursdays", "Deploys happen on Mondays")


async def _build(kernel: MemoryKernel, clock: FrozenClock) -> tuple[TurnContext, TurnContext]:
    """A chain of three facts, an unrelated fact, a rejected decision, two context reports
    (a full turn and a greeting), and noise of another agent."""
    for content in DEPLOYS:
        await kernel.heart.facts.learn(
            FactInput(agent_id=AGENT, subject="deploy day", content=content)
        )
        clock.advance(minutes=5)
    await kernel.heart.facts.learn(FactInput(agent_id=AGENT, content="The user prefers Python"))
    await kernel.heart.facts.learn(FactInput(agent_id="other", content="Other agent's fact"))
    clock.advance(minutes=1)
    done = await kernel.pre_turn(
        TurnInput(agent_id=AGENT, session_id="s1", message="Deploy the hotfix", frame="decision")
    )
    result = await kernel.post_turn(done.turn, TurnOutcome(response_text="Done! ✅"))
    assert result.skipped is SkipReason.INFORMATIONAL
    clock.advance(minutes=1)
    hey = await kernel.pre_turn(TurnInput(agent_id=AGENT, session_id="s1", message="Hey!"))
    await kernel.post_turn(hey.turn, TurnOutcome(response_text="Hi!"))
    return done, hey


async def test_inspect_reports_chains_rejections_and_context(
    kernel: MemoryKernel, clock: FrozenClock
) -> None:
    done, hey = await _build(kernel, clock)
    seen = await kernel.inspect(AGENT, limit=10)
    assert seen.count(MemoryKind.FACT, FactStatus.ACTIVE) == 2
    assert seen.count(MemoryKind.FACT, FactStatus.SUPERSEDED) == 2
    assert seen.count(MemoryKind.DECISION, DecisionState.REJECTED) == 1
    assert seen.count(MemoryKind.EPISODE, "ongoing") >= 1
    _check_chain(seen)
    [rejected] = seen.rejected_decisions
    assert rejected.id == done.turn.decision_id and not rejected.active
    assert rejected.rejection_reason == "informational: completion"
    # Newest first, and exactly the reports pre_turn handed to the host.
    assert [e.report for e in seen.context_reports] == [hey.report.context, done.report.context]
    assert [e.episode_id for e in seen.context_reports] == [
        hey.turn.episode_id,
        done.turn.episode_id,
    ]
    greeting = seen.context_reports[0].report
    assert "facts" in greeting.inclusion.excluded_hard and "facts" not in greeting.fetched


def _check_chain(seen: AgentInspection) -> None:
    newest = seen.facts[0]
    assert newest.fact.content == "The user prefers Python" and newest.previous == ()
    chain = seen.facts[1]
    assert chain.fact.content == DEPLOYS[-1] and chain.fact.status is FactStatus.ACTIVE
    assert [f.content for f in chain.previous] == list(reversed(DEPLOYS[:-1]))
    assert chain.previous[0].superseded_by == chain.fact.id
    assert chain.previous[1].superseded_by == chain.previous[0].id
    assert all(f.status is FactStatus.SUPERSEDED for f in chain.previous)
    assert all(f.agent_id == AGENT for c in seen.facts for f in (c.fact, *c.previous))


async def test_a_handle_from_another_process_still_persists_its_report(
    kernel: MemoryKernel,
) -> None:
    """The report rides on the handle: a host that serialises the handle between pre_turn
    and post_turn (another worker, another process) loses nothing."""
    ctx = await kernel.pre_turn(TurnInput(agent_id=AGENT, session_id="s9", message="Hey!"))
    wire = ctx.turn.model_dump_json()
    await kernel.post_turn(TurnHandle.model_validate_json(wire), TurnOutcome(response_text="Hi"))
    [entry] = (await kernel.inspect(AGENT)).context_reports
    assert entry.report == ctx.report.context and entry.episode_id == ctx.turn.episode_id


async def test_limit_bounds_each_list_and_is_validated(
    kernel: MemoryKernel, clock: FrozenClock
) -> None:
    await _build(kernel, clock)
    seen = await inspect_agent(kernel.database, AGENT, limit=1)
    assert len(seen.facts) == 1 and len(seen.context_reports) == 1
    assert len(seen.facts[0].previous) == 0  # the newest fact has no chain
    for bad in (0, 1001, True):
        with pytest.raises(ValidationError):
            await inspect_agent(kernel.database, AGENT, limit=bad)
    with pytest.raises(ValidationError):
        await inspect_agent(kernel.database, "", limit=5)


async def test_unknown_agent_is_empty(kernel: MemoryKernel, clock: FrozenClock) -> None:
    await _build(kernel, clock)
    seen = await inspect_agent(kernel.database, "nobody")
    assert seen.counts == () and seen.facts == () and seen.context_reports == ()


async def test_cli_inspect(
    kernel: MemoryKernel, clock: FrozenClock, pg_dsn: str, drop_schema: str
) -> None:
    await _build(kernel, clock)
    args = ["inspect", "--agent", AGENT, "--dsn", pg_dsn, "--schema", drop_schema]
    # The CLI runs its own event loop: give it a thread.
    result = await asyncio.to_thread(CliRunner().invoke, app, args)
    assert result.exit_code == 0, result.output
    out = result.output
    for expected in ("memories by status", "superseded", "informational:", "RESPOND"):
        assert expected in out
    assert "Mondays" in out and "Fridays" in out
    assert "Other agent" not in out
    # Each current fact with the id that erases it (memory-kernel erase --memory).
    (current,) = [f for f in await kernel.heart.facts.search(AGENT, "deploy day") if
                  f.fact.content == DEPLOYS[-1]]  # fmt: skip
    assert str(current.fact.id) in out


async def test_migration_0003_round_trip(kernel: MemoryKernel, drop_schema: str) -> None:
    """Down to 0002 keeps the context reports already written (a round trip loses no row)
    and restores the old constraint for new rows; up again accepts them."""
    ctx = await kernel.pre_turn(TurnInput(agent_id=AGENT, session_id="s1", message="Hello there"))
    await kernel.post_turn(ctx.turn, TurnOutcome(response_text="Hi"))
    event = Event(
        agent_id=AGENT, kind=MemoryKind.EPISODE, memory_id=uuid.uuid4(),
        event=EventKind.CONTEXT_ASSEMBLED, decided_by=DecidedBy.SYSTEM, at=kernel.clock.now(),
    )  # fmt: skip
    assert await _reports(kernel) == 1
    async with kernel.database.transaction() as conn:
        await conn.run_sync(migrate.downgrade, drop_schema, "0002")
    assert await _reports(kernel) == 1
    with pytest.raises(ValidationError, match="ck_memory_events_event"):
        async with kernel.database.transaction() as conn:
            await write_events(conn, [event])
    async with kernel.database.transaction() as conn:
        await conn.run_sync(migrate.upgrade, drop_schema, "head")
    async with kernel.database.transaction() as conn:
        await write_events(conn, [event])
    assert await _reports(kernel) == 2


async def _reports(kernel: MemoryKernel) -> int:
    async with kernel.database.connection() as conn:
        n = await conn.scalar(
            select(func.count()).where(
                memory_events.c.agent_id == AGENT,
                memory_events.c.event == EventKind.CONTEXT_ASSEMBLED.value,
            )
        )
    return int(n or 0)
