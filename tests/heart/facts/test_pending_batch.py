"""The embedding queue settles an agent's pending facts as one batch: it must leave exactly
the state that settling them one at a time leaves — pending facts merged into, superseding
or contradicting stored facts *and* each other, and a pending fact a newer stored fact
already updated — and never settle a fact twice."""

from __future__ import annotations

import asyncio

import pytest

from memory_kernel import MemoryKernel
from memory_kernel.heart.facts import service
from memory_kernel.models.enums import FactStatus
from memory_kernel.models.facts import FactInput
from memory_kernel.testing import FrozenClock
from tests.heart.facts.states import fact_events, fact_rows

STORED = [
    "Kai owns the deploy pipeline.",
    "Our cluster has 12 worker nodes.",
    "Two-factor login is enabled for contractors.",
]
# (content, deferred): learned in this order, a minute apart.
SCRIPT = [
    ("The deploy pipeline is owned by Kai.", True),  # merged into a stored fact
    ("Our cluster has 16 worker nodes.", True),  # supersedes a stored fact
    ("Two-factor login is disabled for contractors.", True),  # contradicts a stored fact
    ("The build cache holds 20 GB.", True),
    ("The build cache holds 50 GB.", True),  # supersedes the pending fact before it
    ("Build cache holds 50 GB.", True),  # merged into the pending fact before it
    ("The nightly export runs at 01:00 UTC.", True),
    ("The nightly export runs at 03:00 UTC.", False),  # newer, stored: retires the one above
]


async def _learn_script(kernel: MemoryKernel, clock: FrozenClock, agent: str) -> None:
    svc = kernel.heart.facts
    for content in STORED:
        await svc.learn(FactInput(agent_id=agent, content=content))
    for content, deferred in SCRIPT:
        clock.advance(minutes=1)
        await svc.learn(FactInput(agent_id=agent, content=content, defer_embedding=deferred))


async def _pending(kernel: MemoryKernel, agent: str) -> int:
    rows = await fact_rows(kernel, agent)
    return sum(1 for r in rows if r[1] == FactStatus.PENDING_EMBED.value)


@pytest.mark.parametrize("chunk", [1, 3, 64])
async def test_one_pass_leaves_the_state_of_one_fact_at_a_time(
    kernel: MemoryKernel, clock: FrozenClock, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    """Chunks of 1 and 3: a stored fact the pass retired in an earlier chunk comes back in a
    later chunk's read and must be taken as the pass left it."""
    monkeypatch.setattr(service, "READ_CHUNK", chunk)
    svc = kernel.heart.facts
    for agent in ("one", "all"):
        await _learn_script(kernel, clock, agent)
    assert await _pending(kernel, "all") == 7
    singles = [await svc.embed_pending("one", limit=1) for _ in range(7)]
    assert await _pending(kernel, "one") == 0
    report = await svc.embed_pending("all")
    assert await fact_rows(kernel, "all") == await fact_rows(kernel, "one")
    assert await fact_events(kernel, "all") == await fact_events(kernel, "one")
    assert report == sum(singles[1:], singles[0])
    # The script does exercise every path: in-pass merges and supersessions included.
    assert (report.embedded, report.merged, report.superseded, report.contradictions) == (
        4, 2, 3, 1,
    )  # fmt: skip
    rows = {r[0]: r for r in await fact_rows(kernel, "all")}
    assert rows["Build cache holds 50 GB."][4:6] == (None, "The build cache holds 50 GB.")
    assert rows["The build cache holds 20 GB."][4] == "The build cache holds 50 GB."
    export = rows["The nightly export runs at 01:00 UTC."]
    assert export[1] == FactStatus.SUPERSEDED.value
    assert export[4] == "The nightly export runs at 03:00 UTC."


async def test_concurrent_passes_settle_each_fact_once(
    kernel: MemoryKernel, clock: FrozenClock
) -> None:
    """Two passes read the same waiting facts before either has the agent's lock: the second
    must skip what the first settled (a merge done twice would reinforce twice)."""
    await _learn_script(kernel, clock, "a")
    before = await fact_rows(kernel, "a")
    first, second = await asyncio.gather(
        kernel.heart.facts.embed_pending("a"), kernel.heart.facts.embed_pending("a")
    )
    settled = [r.embedded + r.merged for r in (first, second)]
    assert sorted(settled) == [0, 6]  # the pending fact a newer one retired is the 7th
    assert await _pending(kernel, "a") == 0
    rows = {r[0]: r for r in await fact_rows(kernel, "a")}
    assert rows["Kai owns the deploy pipeline."][2] == 2  # reinforced once, not twice
    assert rows["The build cache holds 50 GB."][2] == 2
    assert len(rows) == len(before)
