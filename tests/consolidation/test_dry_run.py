"""A dry run reports exactly what the real run then does, and changes nothing.

The stores here are built so that earlier phases change what later ones find: a deferred
duplicate is folded into a known fact while the queue drains (that fact is then fresh
evidence and does not decay), decay pushes a fact below the deprecation threshold, and a
duplicate cluster is merged after decay moved its confidences.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from memory_kernel import MemoryKernel
from memory_kernel.models.consolidation import AgentConsolidation, ConsolidationReport
from memory_kernel.models.consolidation import ConsolidationAction as Action
from memory_kernel.models.enums import FactStatus
from memory_kernel.models.facts import FactInput
from memory_kernel.testing import FakeEmbedder, FrozenClock
from tests.conftest import schema_config
from tests.consolidation.conftest import (
    ResolvingJudge,
    add_episode,
    add_fact,
    events_of,
    get,
    snapshot,
)

A, B = "agent-a", "agent-b"
THEME = "The user prefers dark mode in the code editor"
THEME_AGAIN = "User prefers dark mode in the editor"
CLUSTER = "The billing service stores its nightly snapshots in bucket billing-archive"
LIKES = "Alice likes the new dashboard layout."
DISLIKES = "Alice dislikes the new dashboard layout a lot."


@pytest.fixture
def judge() -> ResolvingJudge:
    return ResolvingJudge()


@pytest.fixture
async def quiet(
    pg_dsn: str, drop_schema: str, clock: FrozenClock, embedder: FakeEmbedder
) -> AsyncIterator[MemoryKernel]:
    # No background worker: the deferred facts wait for the consolidation run.
    config = schema_config(drop_schema, consolidation={"embed_worker": False})
    async with MemoryKernel.open(pg_dsn, config=config, clock=clock, embedder=embedder) as k:
        yield k


@pytest.fixture
async def judged(
    pg_dsn: str, drop_schema: str, clock: FrozenClock, embedder: FakeEmbedder,
    judge: ResolvingJudge,
) -> AsyncIterator[MemoryKernel]:  # fmt: skip
    config = schema_config(drop_schema, consolidation={"embed_worker": False})
    async with MemoryKernel.open(
        pg_dsn, config=config, clock=clock, embedder=embedder, judge=judge
    ) as opened:
        yield opened


async def _learn(kernel: MemoryKernel, agent: str, content: str, **options: Any) -> Any:
    outcome = await kernel.heart.facts.learn(FactInput(agent_id=agent, content=content, **options))
    return outcome.fact.id


async def _store(kernel: MemoryKernel, clock: FrozenClock, agent: str) -> dict[str, Any]:
    learned = (
        ("db", "The staging database runs on PostgreSQL 16", {"confidence": 0.6}),
        ("on", "The nightly backup job is enabled for billing", {"confidence": 0.9}),
        ("off", "The nightly backup job is not enabled for billing", {"confidence": 0.9}),
        ("vpn", "The old VPN gateway is in Dublin", {"confidence": 0.32}),
        ("theme", THEME, {"confidence": 0.9}),
        ("again", THEME_AGAIN, {"defer_embedding": True}),
        ("new", "The on-call rotation changes on Mondays", {"defer_embedding": True}),
    )
    ids = {name: await _learn(kernel, agent, text, **opts) for name, text, opts in learned}
    for n, text in enumerate((CLUSTER + ".", CLUSTER, "Currently t" + CLUSTER[1:] + ".")):
        ids[f"cluster{n}"] = await add_fact(kernel, agent, text, confidence=0.9 - 0.05 * n)
    clock.advance(days=21)
    await add_episode(kernel, agent, "The staging database runs on PostgreSQL 16")
    return ids


def _figures(agent: AgentConsolidation) -> tuple[Any, ...]:
    return (agent.status, dict(agent.counts), agent.facts_scanned, agent.candidate_pairs,
            agent.ambiguous, agent.error)  # fmt: skip


async def _state(kernel: MemoryKernel, *agents: str) -> list[Any]:
    return [(await snapshot(kernel, a), len(await events_of(kernel, a))) for a in agents]


async def _dry_then_real(
    kernel: MemoryKernel, agent: str
) -> tuple[ConsolidationReport, ConsolidationReport]:
    before = await _state(kernel, agent)
    dry = await kernel.consolidate(agent, dry_run=True)
    assert dry.dry_run
    assert await _state(kernel, agent) == before  # statuses, confidences, events untouched
    real = await kernel.consolidate(agent)
    assert await _state(kernel, agent) != before
    return dry, real


async def test_dry_run_reports_what_the_real_run_does(
    quiet: MemoryKernel, clock: FrozenClock
) -> None:
    ids = await _store(quiet, clock, A)
    theme_before = (await get(quiet, A, ids["theme"])).confidence
    dry, real = await _dry_then_real(quiet, A)
    assert _figures(dry.agents[0]) == _figures(real.agents[0])
    # The scenario does what it is meant to: phases feeding later ones.
    again = await get(quiet, A, ids["again"])
    assert again.status is FactStatus.MERGED and again.merged_into == ids["theme"]
    assert (await get(quiet, A, ids["theme"])).confidence > theme_before  # not decayed
    assert (await get(quiet, A, ids["vpn"])).status is FactStatus.DEPRECATED
    assert (await get(quiet, A, ids["new"])).status is FactStatus.ACTIVE
    for action in (Action.EMBEDDED, Action.MERGED, Action.DECAYED, Action.REINFORCED,
                   Action.CONTRADICTION, Action.DEPRECATED):  # fmt: skip
        assert real.count(action) >= 1, action
    # What is left is the same for both: a second dry run equals a second real run.
    again_dry, again_real = await quiet.consolidate(A, dry_run=True), await quiet.consolidate(A)
    assert _figures(again_dry.agents[0]) == _figures(again_real.agents[0])


async def test_dry_run_of_every_agent_matches(quiet: MemoryKernel, clock: FrozenClock) -> None:
    await _learn(quiet, B, THEME, confidence=0.9)
    await _learn(quiet, B, THEME_AGAIN, defer_embedding=True)
    await _store(quiet, clock, A)
    before = await _state(quiet, A, B)
    dry = await quiet.consolidate_all(concurrency=2, dry_run=True)
    assert await _state(quiet, A, B) == before
    real = await quiet.consolidate_all(concurrency=2)
    by_agent = {a.agent_id: _figures(a) for a in real.agents}
    assert {a.agent_id: _figures(a) for a in dry.agents} == by_agent
    assert by_agent[B][1] == {Action.MERGED: 1}


async def test_dry_run_without_the_embedder_reports_the_same_failure(
    quiet: MemoryKernel, clock: FrozenClock, embedder: FakeEmbedder
) -> None:
    await _store(quiet, clock, A)
    embedder.fail = RuntimeError("embedder down")
    dry, real = await _dry_then_real(quiet, A)
    assert _figures(dry.agents[0]) == _figures(real.agents[0])
    assert real.count(Action.EMBEDDED) == 0 and "not embedded" in (real.agents[0].error or "")


async def test_dry_run_never_asks_the_judge(judged: MemoryKernel, judge: ResolvingJudge) -> None:
    await add_fact(judged, A, LIKES, confidence=0.8)
    await add_fact(judged, A, DISLIKES, confidence=0.6)
    before = await _state(judged, A)
    dry = await judged.consolidate(A, dry_run=True)
    assert await _state(judged, A) == before
    assert dry.judge_calls == 0 and not judge.requests
    # Its cases are the judge's to decide: reported as ambiguous, with no outcome claimed.
    assert dry.agents[0].ambiguous == 1 and dry.counts == {}
    judge.add({"decision": "contradiction", "reason": "cannot both hold"})
    real = await judged.consolidate(A)
    assert real.judge_calls == 1 and real.agents[0].ambiguous == 1
    assert real.count(Action.CONTRADICTION) == 1
