"""The embedding queue: pending facts are findable by text, embedded by the background
worker once the embedder is back (also after a restart), and drained by consolidation."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable

from memory_kernel import MemoryKernel
from memory_kernel.models.consolidation import ConsolidationAction as Action
from memory_kernel.models.enums import FactStatus
from memory_kernel.models.facts import FactInput
from memory_kernel.testing import FakeEmbedder, FrozenClock
from tests.conftest import schema_config
from tests.consolidation.conftest import get

A = "agent-a"
FAST: dict[str, object] = {
    "embed_worker_poll_s": 0.02,
    "embed_worker_grace_s": 0,
    "embed_worker_backoff_max_s": 0.05,
}


async def _eventually(check: Callable[[], Awaitable[bool]], rounds: int = 1000) -> None:
    """Poll ``check`` every 20 ms (the worker runs in the background) for up to 20 s."""
    for _ in range(rounds):
        if await check():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("condition not reached")


async def test_worker_embeds_pending_facts_when_the_embedder_comes_back(
    pg_dsn: str, drop_schema: str, clock: FrozenClock, embedder: FakeEmbedder
) -> None:
    config = schema_config(drop_schema, consolidation=FAST)
    async with MemoryKernel.open(pg_dsn, config=config, clock=clock, embedder=embedder) as kernel:
        embedder.fail = RuntimeError("embedding service down")
        out = await kernel.heart.facts.learn(
            FactInput(agent_id=A, content="The VPN gateway runs in Dublin.")
        )
        assert out.pending_embedding
        calls = embedder.calls
        await _eventually(lambda: _async(embedder.calls > calls + 2))  # retried, backing off
        hits = await kernel.heart.facts.search(A, "VPN gateway")  # findable meanwhile
        assert [h.fact.id for h in hits] == [out.fact.id]
        assert (await get(kernel, A, out.fact.id)).status is FactStatus.PENDING_EMBED
        embedder.fail = None
        await _eventually(lambda: _is_active(kernel, out.fact.id))


async def test_nothing_is_lost_across_a_restart(
    pg_dsn: str, drop_schema: str, clock: FrozenClock, embedder: FakeEmbedder
) -> None:
    idle = schema_config(drop_schema, consolidation={"embed_worker": False})
    async with MemoryKernel.open(pg_dsn, config=idle, clock=clock, embedder=embedder) as kernel:
        ids = [
            (await kernel.heart.facts.learn(
                FactInput(agent_id=A, content=text, defer_embedding=True)
            )).fact.id
            for text in ("The VPN gateway runs in Dublin.", "Payroll closes on the 25th.")
        ]  # fmt: skip
    config = schema_config(drop_schema, consolidation=FAST)
    async with MemoryKernel.open(pg_dsn, config=config, clock=clock, embedder=embedder) as kernel:
        for fact_id in ids:

            async def active(fid: uuid.UUID = fact_id) -> bool:
                return await _is_active(kernel, fid)

            await _eventually(active)


async def test_the_worker_waits_for_the_grace_period(
    pg_dsn: str, drop_schema: str, clock: FrozenClock, embedder: FakeEmbedder
) -> None:
    config = schema_config(drop_schema, consolidation={**FAST, "embed_worker_grace_s": 60})
    async with MemoryKernel.open(pg_dsn, config=config, clock=clock, embedder=embedder) as kernel:
        out = await kernel.heart.facts.learn(
            FactInput(agent_id=A, content="The VPN gateway runs in Dublin.", defer_embedding=True)
        )
        await asyncio.sleep(0.2)  # several polls: too young to be picked up
        assert (await get(kernel, A, out.fact.id)).status is FactStatus.PENDING_EMBED
        clock.advance(seconds=61)
        await _eventually(lambda: _is_active(kernel, out.fact.id))


async def test_consolidation_drains_the_queue_and_survives_a_dead_embedder(
    pg_dsn: str, drop_schema: str, clock: FrozenClock, embedder: FakeEmbedder
) -> None:
    idle = schema_config(drop_schema, consolidation={"embed_worker": False})
    async with MemoryKernel.open(pg_dsn, config=idle, clock=clock, embedder=embedder) as kernel:
        out = await kernel.heart.facts.learn(
            FactInput(agent_id=A, content="The VPN gateway runs in Dublin.", defer_embedding=True)
        )
        embedder.fail = RuntimeError("down")
        down = await kernel.consolidate(A)
        assert down.count(Action.EMBEDDED) == 0
        assert down.agents[0].error is not None and "not embedded" in down.agents[0].error
        assert (await get(kernel, A, out.fact.id)).status is FactStatus.PENDING_EMBED
        embedder.fail = None
        up = await kernel.consolidate(A)
        assert up.count(Action.EMBEDDED) == 1
        assert (await get(kernel, A, out.fact.id)).status is FactStatus.ACTIVE


async def test_close_stops_the_worker(
    pg_dsn: str, drop_schema: str, clock: FrozenClock, embedder: FakeEmbedder
) -> None:
    config = schema_config(drop_schema, consolidation=FAST)
    kernel = await MemoryKernel.open(pg_dsn, config=config, clock=clock, embedder=embedder)
    worker = kernel._embedding_worker
    assert worker.running
    await kernel.close()
    assert not worker.running
    await worker.stop()  # idempotent


async def _async(value: bool) -> bool:
    return value


async def _is_active(kernel: MemoryKernel, fact_id: uuid.UUID) -> bool:
    return (await get(kernel, A, fact_id)).status is FactStatus.ACTIVE
