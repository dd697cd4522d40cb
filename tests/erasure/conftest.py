"""A kernel with the deterministic FakeExtractor and no background workers, and what the
erasure tests read back: every row an agent has, per table, straight from PostgreSQL."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

import pytest
from sqlalchemy import text

from memory_kernel import MemoryKernel
from memory_kernel.erasure.store import AGENT_TABLES
from memory_kernel.models.extraction import ExtractedFact, ExtractionTurn
from memory_kernel.models.turns import TurnContext, TurnInput, TurnOutcome, TurnResult
from memory_kernel.testing import FakeEmbedder, FakeExtractor, FrozenClock
from tests.heart.extraction.conftest import queue_config


class HeldExtractor(FakeExtractor):
    """The FakeExtractor, which a test may hold while it reads: ``reading`` is set when a
    call has the turns, and the call returns once ``release`` is set (set from the start)."""

    def __init__(self) -> None:
        super().__init__()
        self.reading = asyncio.Event()
        self.release = asyncio.Event()
        self.release.set()

    async def extract(self, turns: Sequence[ExtractionTurn]) -> list[list[ExtractedFact]]:
        self.reading.set()
        await self.release.wait()
        return await super().extract(turns)


@pytest.fixture
def extractor() -> HeldExtractor:
    return HeldExtractor()


@pytest.fixture
async def ekernel(
    pg_dsn: str, drop_schema: str, clock: FrozenClock, embedder: FakeEmbedder,
    extractor: HeldExtractor,
) -> AsyncIterator[MemoryKernel]:  # fmt: skip
    async with MemoryKernel.open(
        pg_dsn, config=queue_config(drop_schema), clock=clock, embedder=embedder,
        extractor=extractor,
    ) as kernel:  # fmt: skip
        yield kernel


async def rows(kernel: MemoryKernel, agent: str) -> dict[str, int]:
    """The agent's rows in every table that holds an agent's rows."""
    async with kernel.database.connection() as conn:
        return {
            table: int(
                await conn.scalar(
                    text(f"SELECT count(*) FROM {table} WHERE agent_id = :a"), {"a": agent}
                )
            )
            for table in AGENT_TABLES
        }


async def exchange(
    kernel: MemoryKernel, agent: str, message: str, reply: str = "Noted.", *,
    session: str = "s1", frame: str | None = None, **outcome: object,
) -> tuple[TurnContext, TurnResult]:  # fmt: skip
    ctx = await kernel.pre_turn(
        TurnInput(agent_id=agent, session_id=session, message=message, frame=frame)
    )
    done = await kernel.post_turn(ctx.turn, TurnOutcome(response_text=reply, **outcome))
    return ctx, done
