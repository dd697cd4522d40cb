"""The runner: idempotence, dry run, per-agent advisory locks across concurrent workers,
cancellation mid-run (never a half-merged cluster), resuming, and the report."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import event, text
from sqlalchemy.ext.asyncio import create_async_engine

from memory_kernel import MemoryKernel
from memory_kernel.models.consolidation import (
    AgentRunStatus,
    ConsolidationPhase,
    ConsolidationProgress,
)
from memory_kernel.models.consolidation import ConsolidationAction as Action
from memory_kernel.models.enums import FactStatus
from memory_kernel.models.facts import FactInput
from memory_kernel.storage import locks
from memory_kernel.testing import FakeEmbedder, FrozenClock
from tests.conftest import schema_config
from tests.consolidation.conftest import (
    add_episode,
    add_fact,
    all_facts,
    events_of,
    snapshot,
)

A = "agent-a"
TOPICS = ["billing", "search", "payments", "auth", "mail", "queue", "cache", "deploy", "audit"]
MANY_TOPICS = (
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
    "juliet", "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo",
    "sierra", "tango", "uniform", "victor", "whiskey", "xray", "yankee", "zulu", "omega",
)  # fmt: skip


def _cluster_texts(topic: str) -> list[str]:
    base = f"The {topic} service stores its nightly snapshots in bucket {topic}-archive"
    return [base + ".", base, "Currently " + base[0].lower() + base[1:] + "."]


async def _plant(
    kernel: MemoryKernel, agent: str, topics: list[str], *, contradictions: bool = True
) -> list[list[uuid.UUID]]:
    clusters = []
    for n, topic in enumerate(topics):
        texts = _cluster_texts(topic)
        confidences = [0.9 - 0.05 * i for i in range(len(texts))]
        clusters.append(
            [
                await add_fact(kernel, agent, t, confidence=c)
                for t, c in zip(texts, confidences, strict=True)
            ]
        )
        if contradictions and n % 3 == 0:
            await add_fact(kernel, agent, f"The {topic} pipeline is enabled for the EU region.")
            await add_fact(kernel, agent, f"The {topic} pipeline is not enabled for the EU region.")
    return clusters


async def _scenario(kernel: MemoryKernel, clock: FrozenClock) -> list[list[uuid.UUID]]:
    clusters = await _plant(kernel, A, TOPICS[:4])
    await add_fact(kernel, A, "The oncall rotation changes every Monday morning.", confidence=0.31)
    await add_fact(kernel, A, "Grafana alerts page the oncall engineer.", confidence=0.55)
    clock.advance(days=20)
    await add_episode(kernel, A, "Grafana alerts paged the oncall engineer twice")
    await kernel.heart.facts.learn(
        FactInput(agent_id=A, content="The VPN gateway runs in Dublin.", defer_embedding=True)
    )
    return clusters


async def test_second_run_changes_nothing(kernel: MemoryKernel, clock: FrozenClock) -> None:
    await _scenario(kernel, clock)
    first = await kernel.consolidate(A)
    counts = first.counts
    assert counts[Action.MERGED] == 8 and counts[Action.CONTRADICTION] == 2
    assert counts[Action.EMBEDDED] == 1 and counts[Action.DEPRECATED] >= 1
    assert counts[Action.DECAYED] >= 1 and counts[Action.REINFORCED] == 1
    before, events = await snapshot(kernel, A), len(await events_of(kernel, A))
    second = await kernel.consolidate(A)
    assert await snapshot(kernel, A) == before
    assert len(await events_of(kernel, A)) == events
    assert set(second.counts) <= {Action.KEPT_BOTH}


async def test_dry_run_changes_nothing_and_reports_the_plan(
    kernel: MemoryKernel, clock: FrozenClock
) -> None:
    await _scenario(kernel, clock)
    before, events = await snapshot(kernel, A), await events_of(kernel, A)
    dry = await kernel.consolidate(A, dry_run=True)
    assert dry.dry_run
    assert await snapshot(kernel, A) == before
    assert await events_of(kernel, A) == events
    real = await kernel.consolidate(A)
    for action in (Action.MERGED, Action.CONTRADICTION, Action.DECAYED, Action.REINFORCED):
        assert dry.count(action) == real.count(action), action
    assert dry.count(Action.EMBEDDED) == 1


async def test_every_change_is_in_the_audit_trail(kernel: MemoryKernel, clock: FrozenClock) -> None:
    await _scenario(kernel, clock)
    await kernel.consolidate(A)
    audited = {e.memory_id for e in await events_of(kernel, A)}
    for fact in await all_facts(kernel, A):
        changed = fact.status is not FactStatus.ACTIVE or fact.updated_at != fact.created_at
        if changed:
            assert fact.id in audited, fact.content


async def test_a_busy_agent_is_skipped_and_reported(
    kernel: MemoryKernel, pg_dsn: str, drop_schema: str
) -> None:
    await _plant(kernel, "busy", TOPICS[:1])
    await _plant(kernel, "free", TOPICS[:1])
    engine = create_async_engine(pg_dsn)
    try:
        async with engine.connect() as other:
            # Another worker holds the agent's consolidation lock.
            assert await locks.try_lock(other, "mk-consolidate", "busy")
            one = await kernel.consolidate("busy")
            everyone = await kernel.consolidate_all()
    finally:
        await engine.dispose()
    assert one.skipped_agents == ("busy",) and one.counts == {}
    assert everyone.skipped_agents == ("busy",)
    statuses = {a.agent_id: a.status for a in everyone.agents}
    assert statuses == {"busy": AgentRunStatus.SKIPPED, "free": AgentRunStatus.DONE}
    assert all(f.status is FactStatus.ACTIVE for f in await all_facts(kernel, "busy"))
    again = await kernel.consolidate("busy")  # the lock went with the other session
    assert again.agents[0].status is AgentRunStatus.DONE and again.count(Action.MERGED) == 2


async def test_agents_whose_32_bit_hashes_collide_do_not_block_each_other(
    kernel: MemoryKernel, pg_dsn: str
) -> None:
    """``hashtext('cx18972') = hashtext('cx20901')``: under the old 32-bit key one agent's
    consolidation reported the other skipped. The 64-bit keys of ``storage.locks`` differ."""
    engine = create_async_engine(pg_dsn)
    try:
        async with engine.connect() as other:
            same = await other.scalar(text("SELECT hashtext('cx18972') = hashtext('cx20901')"))
            assert same, "the pair that collided under hashtext"
            assert await locks.try_lock(other, "mk-consolidate", "cx18972")
            await _plant(kernel, "cx20901", TOPICS[:1])
            report = await kernel.consolidate("cx20901")
    finally:
        await engine.dispose()
    assert report.skipped_agents == ()
    assert report.agents[0].status is AgentRunStatus.DONE


@pytest.fixture
async def second_kernel(
    pg_dsn: str, drop_schema: str, clock: FrozenClock
) -> AsyncIterator[MemoryKernel]:
    """Another worker on the same schema: its own engine and pool."""
    slow = FakeEmbedder()
    slow.delay_s = 0.02
    async with MemoryKernel.open(
        pg_dsn, config=schema_config(drop_schema), clock=clock, embedder=slow
    ) as opened:
        yield opened


async def test_two_workers_never_consolidate_the_same_agent_at_once(
    kernel: MemoryKernel, second_kernel: MemoryKernel, embedder: FakeEmbedder
) -> None:
    agents = [f"agent-{n}" for n in range(8)]
    for agent in agents:
        await _plant(kernel, agent, TOPICS[:2])
        await kernel.heart.facts.learn(
            FactInput(agent_id=agent, content=f"{agent} deploys on Tuesdays.", defer_embedding=True)
        )
    embedder.delay_s = 0.02  # both workers spend time inside each agent's run
    spans: dict[tuple[str, str], list[float]] = {}

    def recorder(worker: str) -> Any:
        def progress(event: ConsolidationProgress) -> None:
            if event.phase in (ConsolidationPhase.PENDING, ConsolidationPhase.DONE):
                spans.setdefault((worker, event.agent_id), []).append(time.monotonic())

        return progress

    first, second = await asyncio.gather(
        kernel.consolidate_all(concurrency=3, progress=recorder("one")),
        second_kernel.consolidate_all(concurrency=3, progress=recorder("two")),
    )
    done = {w: {a.agent_id for a in r.agents if a.status is AgentRunStatus.DONE}
            for w, r in (("one", first), ("two", second))}  # fmt: skip
    assert done["one"] | done["two"] == set(agents)
    for agent in done["one"] & done["two"]:  # both ran it: one after the other, never at once
        one, two = spans[("one", agent)], spans[("two", agent)]
        assert one[-1] <= two[0] or two[-1] <= one[0]
    for agent in agents:  # each cluster merged exactly once, whoever did it
        merged = [e for e in await events_of(kernel, agent) if e.event == "merged"]
        assert len(merged) == 4
    skipped = set(first.skipped_agents) | set(second.skipped_agents)
    assert skipped <= set(agents)


def _check_no_half_merge(facts: list[Any], clusters: list[list[uuid.UUID]]) -> int:
    """Every cluster is untouched or fully merged into an active winner; returns how many
    clusters were merged."""
    by_id = {f.id: f for f in facts}
    merged_clusters = 0
    for cluster in clusters:
        rows = [by_id[i] for i in cluster]
        merged = [r for r in rows if r.status is FactStatus.MERGED]
        if not merged:
            assert all(r.status is FactStatus.ACTIVE and r.evidence_count == 1 for r in rows)
            continue
        winners = {r.merged_into for r in merged}
        assert len(winners) == 1
        winner = by_id[winners.pop()]
        assert winner.status is FactStatus.ACTIVE and len(merged) == len(rows) - 1
        assert winner.evidence_count == len(rows)
        merged_clusters += 1
    return merged_clusters


@pytest.fixture
async def small_batches(
    pg_dsn: str, drop_schema: str, clock: FrozenClock, embedder: FakeEmbedder
) -> AsyncIterator[MemoryKernel]:
    config = schema_config(drop_schema, consolidation={"batch_size": 10, "embed_worker": False})
    async with MemoryKernel.open(pg_dsn, config=config, clock=clock, embedder=embedder) as k:
        yield k


async def test_cancellation_mid_transaction_leaves_no_half_merged_cluster(
    small_batches: MemoryKernel,
) -> None:
    kernel = small_batches
    clusters = await _plant(kernel, A, list(MANY_TOPICS), contradictions=False)  # 27 clusters of 3
    task: asyncio.Task[Any] | None = None
    writes = 0

    def cancel_on_second_write(_c: Any, _cur: Any, statement: str, *_a: Any) -> None:
        nonlocal writes
        if statement.startswith("UPDATE facts SET confidence") and "status" in statement:
            writes += 1
            if writes == 2 and task is not None:
                task.cancel()  # lands while this batch's statement is in flight

    target = kernel.database.engine.sync_engine
    event.listen(target, "before_cursor_execute", cancel_on_second_write)
    try:
        task = asyncio.create_task(kernel.consolidate(A))
        with pytest.raises(asyncio.CancelledError):
            await task
    finally:
        event.remove(target, "before_cursor_execute", cancel_on_second_write)
    partly = _check_no_half_merge(await all_facts(kernel, A), clusters)
    assert 0 < partly < len(clusters)  # the first batch committed, the second rolled back
    report = await kernel.consolidate(A)  # resumes: the lock was released
    assert report.agents[0].status is AgentRunStatus.DONE
    assert _check_no_half_merge(await all_facts(kernel, A), clusters) == len(clusters)


async def test_cancellation_from_the_progress_callback(small_batches: MemoryKernel) -> None:
    kernel = small_batches
    clusters = await _plant(kernel, A, list(MANY_TOPICS), contradictions=False)
    task: asyncio.Task[Any] | None = None

    def progress(event: ConsolidationProgress) -> None:
        if event.phase is ConsolidationPhase.APPLY and event.done > 0 and task is not None:
            task.cancel()

    task = asyncio.create_task(kernel.consolidate(A, progress=progress))
    with pytest.raises(asyncio.CancelledError):
        await task
    assert 0 < _check_no_half_merge(await all_facts(kernel, A), clusters) < len(clusters)
    await kernel.consolidate(A)
    assert _check_no_half_merge(await all_facts(kernel, A), clusters) == len(clusters)


async def test_a_failing_agent_does_not_stop_the_others(
    kernel: MemoryKernel, monkeypatch: pytest.MonkeyPatch
) -> None:
    await _plant(kernel, "good", TOPICS[:1])
    await _plant(kernel, "bad", TOPICS[:1])
    from memory_kernel.consolidation import phases
    from memory_kernel.errors import StorageError

    original = phases.AgentRun._deprecate

    async def broken(self: phases.AgentRun) -> None:
        if self.agent_id == "bad":
            raise StorageError("disk full")
        await original(self)

    monkeypatch.setattr(phases.AgentRun, "_deprecate", broken)
    report = await kernel.consolidate_all()
    assert report.failed_agents == ("bad",)
    bad = next(a for a in report.agents if a.agent_id == "bad")
    assert bad.error is not None and "disk full" in bad.error
    assert bad.counts[Action.MERGED] == 2  # what committed before the failure is reported
    assert next(a for a in report.agents if a.agent_id == "good").status is AgentRunStatus.DONE
