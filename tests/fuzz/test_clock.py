"""A hostile clock: naive, extreme or non-datetime readings. Before, a naive clock was
accepted, rows got naive timestamps, and search_memory/consolidate raised TypeError later.
Now the kernel checks the clock at open and at every reading (``protocols.CheckedClock``):
``ConfigError``, nothing written."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given
from sqlalchemy import text

from memory_kernel import ConfigError, MemoryKernel, MemoryKernelError
from memory_kernel.models.decisions import DecisionInput
from memory_kernel.models.facts import FactInput
from memory_kernel.models.turns import TurnInput, TurnOutcome
from memory_kernel.testing import FakeEmbedder
from tests.conftest import schema_config
from tests.fuzz import strategies as s
from tests.fuzz.checks import attempt, digest

GOOD = datetime(2026, 1, 1, 12, tzinfo=UTC)
BAD = {
    "naive now": datetime.now(),
    "naive": datetime(2026, 1, 1, 12),
    "min": datetime.min.replace(tzinfo=UTC),
    "max": datetime.max.replace(tzinfo=UTC),
    "year 1": datetime(1, 6, 1, tzinfo=UTC),
    "a string": "2026-01-01T12:00:00Z",
    "a timestamp": 1767268800.0,
    "None": None,
}


class SettableClock:
    """A clock that returns whatever it was given, datetime or not; with ``bad_from`` set,
    its readings from that one on (counted in ``readings``) are naive instead."""

    def __init__(self, value: Any = GOOD) -> None:
        self.value = value
        self.readings = 0
        self.bad_from: int | None = None

    def now(self) -> Any:
        self.readings += 1
        if self.bad_from is not None and self.readings >= self.bad_from:
            return datetime(2026, 1, 1, 12)
        return self.value

    def fail_from(self, reading: int | None) -> None:
        self.readings, self.bad_from = 0, reading


@pytest.fixture(scope="module")
async def clock_kernel(pg_dsn: str) -> AsyncIterator[tuple[MemoryKernel, SettableClock]]:
    schema = f"clock_{uuid.uuid4().hex[:12]}"
    clock = SettableClock()
    config = schema_config(schema, consolidation={"embed_worker": False})
    async with MemoryKernel.open(pg_dsn, config=config, clock=clock, embedder=FakeEmbedder()) as k:
        try:
            yield k, clock
        finally:
            async with k.database.transaction() as conn:
                await conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))


@pytest.mark.parametrize("value", BAD.values(), ids=BAD.keys())
async def test_a_bad_clock_is_refused_at_open(pg_dsn: str, drop_schema: str, value: Any) -> None:
    with pytest.raises(ConfigError, match="clock"):
        await MemoryKernel.open(
            pg_dsn, config=schema_config(drop_schema), clock=SettableClock(value)
        )


@pytest.mark.parametrize("value", BAD.values(), ids=BAD.keys())
async def test_a_clock_going_bad_fails_each_call_typed_and_writes_nothing(
    clock_kernel: tuple[MemoryKernel, SettableClock], value: Any
) -> None:
    kernel, clock = clock_kernel
    clock.value = GOOD
    await kernel.heart.facts.learn(FactInput(agent_id="a1", content="Deploys run on Fridays"))
    clock.value = value
    try:
        before = await digest(kernel)
        calls: list[Callable[[], Awaitable[object]]] = [
            lambda: kernel.heart.facts.learn(
                FactInput(agent_id="a1", content="Backups run at night")
            ),
            lambda: kernel.brain.record(
                DecisionInput(agent_id="a1", session_id="s", description="Adopt pgvector")
            ),
            lambda: kernel.search_memory("a1", "deploys"),
            lambda: kernel.consolidate("a1"),
        ]
        for call in calls:
            with pytest.raises(ConfigError, match="clock"):
                await call()
        assert await digest(kernel) == before
    finally:
        clock.value = GOOD


async def test_aware_clocks_in_any_zone_work(
    clock_kernel: tuple[MemoryKernel, SettableClock],
) -> None:
    kernel, clock = clock_kernel
    clock.value = datetime(2026, 1, 2, 9, tzinfo=timezone(timedelta(hours=-5)))
    try:
        await kernel.heart.facts.learn(FactInput(agent_id="tz", content="The office is in Lima"))
        assert await kernel.search_memory("tz", "office")
        await kernel.consolidate("tz")
    finally:
        clock.value = GOOD


@given(when=s.datetimes)
async def test_any_clock_reading(
    clock_kernel: tuple[MemoryKernel, SettableClock], when: Any
) -> None:
    kernel, clock = clock_kernel
    clock.value = when
    try:
        await attempt(
            kernel, "learn (clock)",
            lambda: kernel.heart.facts.learn(FactInput(agent_id="a2", content="Lunch is at noon")),
        )  # fmt: skip
        await attempt(kernel, "search_memory (clock)", lambda: kernel.search_memory("a2", "lunch"))
        await attempt(kernel, "consolidate (clock)", lambda: kernel.consolidate("a2"))
    finally:
        clock.value = GOOD


async def test_a_clock_going_bad_mid_turn_fails_the_hooks_typed(
    clock_kernel: tuple[MemoryKernel, SettableClock],
) -> None:
    """Before: the clock failing in pre_turn's concurrent parts escaped as an
    ``ExceptionGroup`` of ``ConfigError``s, which ``except MemoryKernelError`` misses.
    Now any reading of a whole turn may go bad: the hooks raise ``ConfigError``."""
    kernel, clock = clock_kernel

    async def turn(session: str) -> None:
        ctx = await kernel.pre_turn(
            TurnInput(
                agent_id="mid", session_id=session, frame="decision",
                message="Shall we move the backups to Sunday?",
            )
        )  # fmt: skip
        await kernel.post_turn(
            ctx.turn, TurnOutcome(response_text="We'll move backups to Sunday: it is quiet.")
        )

    clock.value = GOOD
    try:
        clock.fail_from(None)  # count the readings of one whole turn (a fresh session)
        await turn("count")
        total = clock.readings
        await kernel.context.prefetch.wait()  # its readings come after the turn returned
        assert total >= 3
        for n in range(1, total + 1):
            clock.fail_from(n)
            with pytest.raises(MemoryKernelError) as raised:  # not an ExceptionGroup
                await turn(f"s{n}")
            assert isinstance(raised.value, ConfigError), (n, repr(raised.value))
            await kernel.context.prefetch.wait()
    finally:
        clock.fail_from(None)
