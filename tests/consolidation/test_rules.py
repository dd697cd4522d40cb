"""Each consolidation rule against real Postgres, with the frozen clock: evidence, decay,
clear contradictions, auto-merge of duplicate clusters, a changed value never merged,
deprecation, and the audit trail of every change."""

from __future__ import annotations

import math

import pytest

from memory_kernel import MemoryKernel
from memory_kernel.models.consolidation import AgentRunStatus
from memory_kernel.models.consolidation import ConsolidationAction as Action
from memory_kernel.models.enums import EventKind, FactStatus
from memory_kernel.testing import FrozenClock
from tests.consolidation.conftest import add_episode, add_fact, events_of, get

A = "agent-a"
DB_FACT = "The staging database runs on PostgreSQL 16 in Frankfurt."


async def test_supporting_episodes_raise_confidence_asymptotically(
    kernel: MemoryKernel, clock: FrozenClock
) -> None:
    fact = await add_fact(kernel, A, DB_FACT, confidence=0.6)
    clock.advance(hours=1)
    first = await add_episode(kernel, A, "The staging database runs on PostgreSQL 16 in Frankfurt")
    second = await add_episode(kernel, A, "staging database runs on PostgreSQL 16 in Frankfurt now")
    await add_episode(kernel, A, "Rotated the TLS certificates of the public load balancer")
    report = await kernel.consolidate(A)
    after = await get(kernel, A, fact)
    # Two steps of c += 0.05 * (1 - c); one hour of decay is below the write threshold.
    expected = 1 - (1 - 0.6 * math.exp(-0.01 / 24)) * 0.95**2
    assert after.confidence == pytest.approx(expected, rel=1e-9)
    assert set(after.derived_from) == {first, second}
    assert after.evidence_count == 3
    assert report.count(Action.REINFORCED) == 1
    events = [e for e in await events_of(kernel, A) if e.memory_id == fact]
    assert [e.event for e in events] == [EventKind.REINFORCED.value]
    # Old news is not evidence twice.
    again = await kernel.consolidate(A)
    assert (await get(kernel, A, fact)).confidence == after.confidence
    assert again.count(Action.REINFORCED) == 0


async def test_episode_before_the_last_update_is_no_evidence(
    kernel: MemoryKernel, clock: FrozenClock
) -> None:
    await add_episode(kernel, A, "The staging database runs on PostgreSQL 16 in Frankfurt")
    clock.advance(hours=1)
    fact = await add_fact(kernel, A, DB_FACT, confidence=0.6)
    await kernel.consolidate(A)
    assert (await get(kernel, A, fact)).confidence == 0.6


async def test_decay_follows_the_injected_clock_and_is_not_applied_twice(
    kernel: MemoryKernel, clock: FrozenClock
) -> None:
    fact = await add_fact(kernel, A, DB_FACT, confidence=0.8)
    clock.advance(days=30)
    report = await kernel.consolidate(A)
    assert (await get(kernel, A, fact)).confidence == pytest.approx(0.8 * math.exp(-0.3))
    assert report.count(Action.DECAYED) == 1
    await kernel.consolidate(A)  # same instant: nothing more
    assert (await get(kernel, A, fact)).confidence == pytest.approx(0.8 * math.exp(-0.3))
    clock.advance(days=10)  # decay accumulates across runs: exp(-0.01 * 40) in total
    await kernel.consolidate(A)
    assert (await get(kernel, A, fact)).confidence == pytest.approx(0.8 * math.exp(-0.4))
    kinds = [e.event for e in await events_of(kernel, A)]
    assert kinds == [EventKind.CONFIDENCE_CHANGED.value] * 2


async def test_small_decays_accumulate_until_they_matter(
    kernel: MemoryKernel, clock: FrozenClock
) -> None:
    fact = await add_fact(kernel, A, DB_FACT, confidence=0.8)
    for _ in range(6):  # frequent runs: each change alone is below decay_min_change (0.05)
        clock.advance(hours=4)
        await kernel.consolidate(A)
    assert (await get(kernel, A, fact)).confidence == 0.8
    clock.advance(days=6)  # 7 days in all: 0.8 -> 0.746, written with the whole decay
    await kernel.consolidate(A)
    assert (await get(kernel, A, fact)).confidence == pytest.approx(0.8 * math.exp(-0.07))


async def test_clear_contradiction_halves_both_once_and_flags_them(kernel: MemoryKernel) -> None:
    on = await add_fact(kernel, A, "The nightly backup job is enabled for the billing cluster.")
    off = await add_fact(
        kernel, A, "The nightly backup job is not enabled for the billing cluster.", confidence=0.9
    )
    report = await kernel.consolidate(A)
    first, second = await get(kernel, A, on), await get(kernel, A, off)
    assert (first.confidence, second.confidence) == pytest.approx((0.4, 0.45))
    assert off in first.contradicts and on in second.contradicts
    assert first.status is second.status is FactStatus.ACTIVE  # flagged, not retired
    assert report.count(Action.CONTRADICTION) == 1
    assert report.count(Action.MERGED) == 0
    await kernel.consolidate(A)
    assert (await get(kernel, A, on)).confidence == pytest.approx(0.4)


async def test_duplicate_cluster_is_merged_into_the_most_confident_fact(
    kernel: MemoryKernel,
) -> None:
    ep = await add_episode(kernel, A, "Checked the editor theme settings")
    low = await add_fact(kernel, A, "User prefers dark mode in the editor.", confidence=0.5)
    best = await add_fact(
        kernel, A, "The user prefers dark mode in the code editor.", confidence=0.9,
        evidence_count=3,
    )  # fmt: skip
    mid = await add_fact(
        kernel, A, "User prefers dark mode in the editor settings.", confidence=0.7
    )
    other = await add_fact(kernel, A, DB_FACT)
    async with kernel.database.transaction() as conn:  # some lineage on a loser
        from sqlalchemy import update

        from memory_kernel.storage.tables import facts

        await conn.execute(
            update(facts).where(facts.c.agent_id == A, facts.c.id == low).values(derived_from=[ep])
        )
    report = await kernel.consolidate(A)
    winner = await get(kernel, A, best)
    assert winner.status is FactStatus.ACTIVE
    assert winner.evidence_count == 5 and winner.derived_from == (ep,)
    for loser in (low, mid):
        row = await get(kernel, A, loser)
        assert row.status is FactStatus.MERGED and row.merged_into == best
    assert (await get(kernel, A, other)).status is FactStatus.ACTIVE
    assert report.count(Action.MERGED) == 2
    merged_events = [e for e in await events_of(kernel, A) if e.event == "merged"]
    assert {e.memory_id for e in merged_events} == {low, mid}
    assert {e.related_id for e in merged_events} == {best}


async def test_no_merge_across_categories_values_or_without_confidence(
    kernel: MemoryKernel,
) -> None:
    a = await add_fact(kernel, A, "The deploy window opens at 14:00 on Fridays.", confidence=0.9)
    b = await add_fact(kernel, A, "The deploy window opens at 16:00 on Fridays.", confidence=0.9)
    c = await add_fact(kernel, A, "User prefers dark mode in the editor.", category="ui")
    d = await add_fact(kernel, A, "User prefers dark mode in the editor settings.", category="x")
    e = await add_fact(
        kernel, A, "The team uses Grafana dashboards for monitoring.", confidence=0.5
    )
    f = await add_fact(
        kernel, A, "The team uses Grafana dashboards for monitoring alerts.", confidence=0.55
    )
    report = await kernel.consolidate(A)
    for fact in (a, b, c, d, e, f):
        assert (await get(kernel, A, fact)).status is FactStatus.ACTIVE
    assert report.count(Action.MERGED) == 0
    assert report.agents[0].ambiguous == 3  # value change, category, low confidence
    assert report.count(Action.KEPT_BOTH) == 3  # no judge: the rules keep both


async def test_low_confidence_facts_are_deprecated(
    kernel: MemoryKernel, clock: FrozenClock
) -> None:
    weak = await add_fact(kernel, A, DB_FACT, confidence=0.32)
    middling = await add_fact(kernel, A, "The team uses Grafana dashboards.", confidence=0.45)
    clock.advance(days=10)  # 0.32 -> 0.29, 0.45 -> 0.41
    report = await kernel.consolidate(A)
    assert (await get(kernel, A, weak)).status is FactStatus.DEPRECATED
    mid = await get(kernel, A, middling)
    assert mid.status is FactStatus.ACTIVE and 0.3 < mid.confidence < 0.5
    assert report.count(Action.DEPRECATED) == 1
    # 0.3-0.5: only the active tool's threshold (> 0.3) still finds it; passive (> 0.5) not.
    tool = await kernel.heart.facts.search(A, "Grafana dashboards", min_confidence=0.3)
    passive = await kernel.heart.facts.search(A, "Grafana dashboards", min_confidence=0.5)
    assert [h.fact.id for h in tool] == [middling] and passive == []
    hits = await kernel.heart.facts.search(A, DB_FACT)
    assert weak not in [h.fact.id for h in hits]
    events = [e for e in await events_of(kernel, A) if e.memory_id == weak]
    assert [e.event for e in events][-1] == EventKind.DEPRECATED.value


async def test_report_of_an_unknown_agent_is_empty(kernel: MemoryKernel) -> None:
    report = await kernel.consolidate("nobody")
    assert report.agents[0].status is AgentRunStatus.DONE
    assert report.counts == {}
