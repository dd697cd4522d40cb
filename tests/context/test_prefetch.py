"""Passive prefetch against real Postgres: the next turn uses a fresh prefetch, a stale one
is ignored, tasks are bounded and cancel-safe, and close() leaks nothing."""

from __future__ import annotations

import asyncio

from memory_kernel import MemoryKernel
from memory_kernel.context.engine import ContextEngine
from memory_kernel.context.prefetch import Prefetcher
from memory_kernel.models.context import ContextRequest, NodeContent
from memory_kernel.testing import FakeEmbedder, FrozenClock
from tests.conftest import schema_config

from .conftest import add_episode, add_fact, count_statements, runtime_of

A = "agent-a"


def request(message: str) -> ContextRequest:
    return ContextRequest(agent_id=A, session_id="s1", message=message)


def prefetch_tasks() -> list[asyncio.Task[object]]:
    return [t for t in asyncio.all_tasks() if t.get_name().startswith("memory-kernel prefetch")]


async def test_next_turn_uses_the_prefetched_recall(
    kernel: MemoryKernel, engine: ContextEngine
) -> None:
    await add_fact(kernel, A, "Lena's sister lives in Oslo")
    await add_episode(kernel, A, "Lena planned a trip to Oslo to see her sister")
    assert engine.schedule_prefetch(
        agent_id=A,
        session_id="s1",
        turns=["user: I'm thinking of visiting my sister", "assistant: Where does she live?"],
    )
    await engine.prefetch.wait()
    with count_statements(kernel) as statements:
        ctx = await engine.build(request("she lives up north, any tips for the trip?"))
    assert ctx.report.prefetch_used
    assert any("Oslo" in h.text for h in ctx.hits)
    assert not any("FROM facts" in s or "FROM episodes" in s for s in statements)
    # Consumed: the turn after that recalls live again.
    again = await engine.build(request("she lives up north, any tips for the trip?"))
    assert not again.report.prefetch_used


async def test_a_stale_prefetch_is_not_used(
    kernel: MemoryKernel, engine: ContextEngine, clock: FrozenClock
) -> None:
    await add_fact(kernel, A, "Lena's sister lives in Oslo")
    engine.schedule_prefetch(agent_id=A, session_id="s1", turns=["my sister in Oslo"])
    await engine.prefetch.wait()
    clock.advance(seconds=kernel.config.context.prefetch_ttl_s + 1)
    ctx = await engine.build(request("tips for the Oslo trip?"))
    assert not ctx.report.prefetch_used
    assert "facts" in ctx.report.fetched


async def test_prefetch_is_per_session(kernel: MemoryKernel, engine: ContextEngine) -> None:
    await add_fact(kernel, A, "Lena's sister lives in Oslo")
    engine.schedule_prefetch(agent_id=A, session_id="other", turns=["my sister in Oslo"])
    await engine.prefetch.wait()
    ctx = await engine.build(request("tips for the Oslo trip?"))
    assert not ctx.report.prefetch_used


async def test_close_cancels_running_prefetches_and_leaks_no_task(
    kernel: MemoryKernel, engine: ContextEngine, embedder: FakeEmbedder
) -> None:
    embedder.delay_s = 30.0  # a hung embedder: the prefetch would wait a long time
    engine.schedule_prefetch(agent_id=A, session_id="s1", turns=["something"])
    engine.schedule_prefetch(agent_id=A, session_id="s2", turns=["something else"])
    await asyncio.sleep(0.05)
    assert engine.prefetch.running == 2
    await engine.close()
    assert engine.prefetch.running == 0
    assert prefetch_tasks() == []
    assert not engine.schedule_prefetch(agent_id=A, session_id="s1", turns=["after close"])


async def test_a_newer_turn_cancels_the_sessions_older_prefetch(
    kernel: MemoryKernel, engine: ContextEngine, embedder: FakeEmbedder
) -> None:
    await add_fact(kernel, A, "The boat is called Aurora")
    embedder.delay_s = 30.0
    engine.schedule_prefetch(agent_id=A, session_id="s1", turns=["an old turn"])
    await asyncio.sleep(0.05)
    (older,) = prefetch_tasks()
    embedder.delay_s = 0.0
    engine.schedule_prefetch(agent_id=A, session_id="s1", turns=["what is the boat called"])
    await engine.prefetch.wait()
    assert older.cancelled()
    entry = engine.prefetch.take(A, "s1")
    assert entry is not None and entry.query == "what is the boat called"


async def test_prefetches_are_bounded_and_failures_store_nothing(
    pg_dsn: str, drop_schema: str, clock: FrozenClock, embedder: FakeEmbedder
) -> None:
    config = schema_config(drop_schema, context={"prefetch_max_tasks": 2})
    async with MemoryKernel.open(pg_dsn, config=config, clock=clock, embedder=embedder) as kernel:
        engine = ContextEngine(runtime_of(kernel))
        embedder.delay_s = 30.0
        started = [
            engine.schedule_prefetch(agent_id=A, session_id=f"s{i}", turns=["x"]) for i in range(4)
        ]
        assert started == [True, True, False, False]
        assert engine.prefetch.skipped == 2
        await engine.close()
        engine = ContextEngine(runtime_of(kernel))
        embedder.delay_s = 0.0
        embedder.fail = RuntimeError("down")  # recall degrades to full text: still stored
        engine.schedule_prefetch(agent_id=A, session_id="s1", turns=["x"])
        await engine.prefetch.wait()
        assert engine.prefetch.take(A, "s1") is not None
        await engine.close()


async def test_a_failed_prefetch_stores_nothing_and_raises_nothing(clock: FrozenClock) -> None:
    async def failing(_agent: str, _query: str) -> dict[str, NodeContent]:
        raise RuntimeError("database gone")

    prefetcher = Prefetcher(failing, clock=clock, ttl_s=60, max_sessions=10, max_tasks=2)
    assert prefetcher.schedule(agent_id=A, session_id="s1", turns=["x"])
    await prefetcher.wait()
    assert prefetcher.take(A, "s1") is None
    await prefetcher.close()


async def test_the_cache_keeps_the_most_recent_sessions(clock: FrozenClock) -> None:
    async def fetch(_agent: str, query: str) -> dict[str, NodeContent]:
        return {}

    prefetcher = Prefetcher(fetch, clock=clock, ttl_s=60, max_sessions=2, max_tasks=5)
    for session in ("s1", "s2", "s3"):
        prefetcher.schedule(agent_id=A, session_id=session, turns=["x"])
        await prefetcher.wait()
    assert prefetcher.take(A, "s1") is None, "evicted"
    assert prefetcher.take(A, "s2") is not None and prefetcher.take(A, "s3") is not None
    assert not prefetcher.schedule(agent_id=A, session_id="s4", turns=["  "]), "nothing to ask"
    await prefetcher.close()
