"""Episodes end by themselves: the kernel's sweeper ends the idle episodes of every agent
(summary from their turns, admission) every ``episode_sweep_s``, with no host call. Real
Postgres; the wait is on an event of the database, not a timed assert."""

from __future__ import annotations

import asyncio
import uuid

from memory_kernel import MemoryKernel
from memory_kernel.models.enums import EpisodeStatus
from memory_kernel.models.turns import TurnInput, TurnOutcome
from memory_kernel.testing import FakeEmbedder, FrozenClock
from tests.conftest import schema_config


async def _exchange(kernel: MemoryKernel, agent: str, message: str) -> uuid.UUID:
    ctx = await kernel.pre_turn(TurnInput(agent_id=agent, session_id="s1", message=message))
    await kernel.post_turn(ctx.turn, TurnOutcome(response_text="Noted."))
    return ctx.turn.episode_id


async def _statuses(kernel: MemoryKernel, episodes: dict[str, uuid.UUID]) -> set[EpisodeStatus]:
    got = [await kernel.heart.episodes.get(e, agent_id=a) for a, e in episodes.items()]
    return {episode.status for episode in got}


async def test_idle_episodes_of_every_agent_end_without_a_call(
    pg_dsn: str, drop_schema: str, clock: FrozenClock, embedder: FakeEmbedder
) -> None:
    config = schema_config(drop_schema, heart={"episode_sweep_s": 0.05})
    async with MemoryKernel.open(pg_dsn, config=config, clock=clock, embedder=embedder) as kernel:
        episodes = {
            "ann": await _exchange(kernel, "ann", "The boiler service is on the third of March."),
            "bob": await _exchange(kernel, "bob", "Our standup moved to ten o'clock."),
        }
        await asyncio.sleep(0.3)  # several rounds: nothing is idle yet
        assert await _statuses(kernel, episodes) == {EpisodeStatus.ONGOING}
        clock.advance(seconds=kernel.config.heart.episode_idle_end_s + 1)
        for _ in range(200):  # until the sweeper's next rounds have ended both
            if await _statuses(kernel, episodes) == {EpisodeStatus.COMPLETED}:
                break
            await asyncio.sleep(0.05)
        assert await _statuses(kernel, episodes) == {EpisodeStatus.COMPLETED}


async def test_the_sweeper_is_off_with_zero(
    pg_dsn: str, drop_schema: str, clock: FrozenClock, embedder: FakeEmbedder
) -> None:
    config = schema_config(drop_schema, heart={"episode_sweep_s": 0})
    async with MemoryKernel.open(pg_dsn, config=config, clock=clock, embedder=embedder) as kernel:
        await _exchange(kernel, "ann", "The boiler service is booked for the third of March.")
        clock.advance(seconds=kernel.config.heart.episode_idle_end_s + 1)
        await asyncio.sleep(0.3)
        assert await kernel.heart.episodes.count_idle("ann") == 1  # nobody ended it
