"""The set-based writes of consolidation: guarded batch updates leave concurrent changes
alone, bulk events match the audit trail's format, merges keep the winner's lineage, and
the neighbour search does not depend on the order the vectors were read in."""

from __future__ import annotations

import uuid
from datetime import timedelta

import numpy as np

from memory_kernel import MemoryKernel
from memory_kernel.consolidation import repository as repo
from memory_kernel.consolidation.apply import ContradictionUnit, MergeUnit, Unit, apply_units
from memory_kernel.consolidation.audit import insert_events
from memory_kernel.consolidation.candidates import IvfParams, VectorStore, candidate_pairs
from memory_kernel.consolidation.policy import ConfidenceChange
from memory_kernel.models.consolidation import ConsolidationAction as Action
from memory_kernel.models.enums import DecidedBy, EventKind, FactStatus, MemoryKind
from memory_kernel.storage.events import Event, write_events
from memory_kernel.storage.tables import facts
from memory_kernel.testing import FrozenClock
from tests.consolidation.conftest import add_fact, events_of, get

A = "agent-a"


async def test_confidence_write_skips_a_fact_changed_since_it_was_read(
    kernel: MemoryKernel, clock: FrozenClock
) -> None:
    kept = await add_fact(kernel, A, "The billing job runs at midnight.", confidence=0.8)
    raced = await add_fact(kernel, A, "The search index rebuilds weekly.", confidence=0.8)
    read_at = clock.now()
    async with kernel.database.transaction() as conn:  # a learn reinforced it meanwhile
        await conn.execute(
            facts.update()
            .where(facts.c.agent_id == A, facts.c.id == raced)
            .values(confidence=0.9, updated_at=read_at + timedelta(seconds=1))
        )
    episode = uuid.uuid4()
    changes = [
        (ConfidenceChange(i, 0.8, 0.5, 30.0, (episode,), read_at), read_at) for i in (kept, raced)
    ]
    async with kernel.database.transaction() as conn:
        written = await repo.write_confidence(conn, A, changes, read_at)
    assert written == {kept}
    assert (await get(kernel, A, kept)).confidence == 0.5
    assert (await get(kernel, A, kept)).derived_from == (episode,)
    assert (await get(kernel, A, raced)).confidence == 0.9


async def test_deprecation_rechecks_the_confidence_under_the_lock(
    kernel: MemoryKernel, clock: FrozenClock
) -> None:
    low = await add_fact(kernel, A, "The VPN gateway runs in Dublin.", confidence=0.2)
    lifted = await add_fact(kernel, A, "The CDN purges every hour.", confidence=0.25)
    async with kernel.database.connection() as conn:
        found = await repo.below_confidence(conn, A, 0.3)
    assert set(found) == {low, lifted}
    async with kernel.database.transaction() as conn:
        await conn.execute(
            facts.update().where(facts.c.agent_id == A, facts.c.id == lifted).values(confidence=0.7)
        )
        done = await repo.deprecate(conn, A, found, 0.3, clock.now())
    assert done == [(low, 0.2)]
    assert (await get(kernel, A, low)).status is FactStatus.DEPRECATED
    assert (await get(kernel, A, lifted)).status is FactStatus.ACTIVE


async def test_bulk_events_are_the_audit_trail_rows(
    kernel: MemoryKernel, clock: FrozenClock
) -> None:
    fact, other = uuid.uuid4(), uuid.uuid4()

    def event(agent: str) -> Event:
        return Event(
            agent_id=agent, kind=MemoryKind.FACT, memory_id=fact, event=EventKind.MERGED,
            decided_by=DecidedBy.RULE, at=clock.now(), reason="duplicate", score=0.91,
            related_id=other, details={"merged": [str(other)], "content_changed": True},
        )  # fmt: skip

    bare = Event(
        agent_id="bulk", kind=MemoryKind.FACT, memory_id=other, event=EventKind.DEPRECATED,
        decided_by=DecidedBy.RULE, at=clock.now(),
    )  # fmt: skip
    async with kernel.database.transaction() as conn:
        await write_events(conn, [event("plain")])
        await insert_events(conn, [event("bulk"), bare])
    columns = ("memory_kind", "memory_id", "event", "reason", "score", "decided_by")
    plain, bulk = await events_of(kernel, "plain"), await events_of(kernel, "bulk")
    assert len(bulk) == 2
    for name in (*columns, "related_id", "details", "created_at"):
        assert getattr(bulk[0], name) == getattr(plain[0], name), name
    assert bulk[1].details == {} and bulk[1].related_id is None and bulk[1].score is None


async def test_one_batch_merges_and_halves_with_the_lineage_kept(
    kernel: MemoryKernel, clock: FrozenClock
) -> None:
    episode_a, episode_b = uuid.uuid4(), uuid.uuid4()
    winner = await add_fact(kernel, A, "Backups run nightly.", confidence=0.9, evidence_count=2)
    loser = await add_fact(kernel, A, "Backups run nightly", confidence=0.7)
    x = await add_fact(kernel, A, "The EU pipeline is enabled.", confidence=0.8)
    y = await add_fact(kernel, A, "The EU pipeline is not enabled.", confidence=0.6)
    async with kernel.database.transaction() as conn:
        await conn.execute(
            facts.update().where(facts.c.agent_id == A, facts.c.id == winner)
            .values(derived_from=[episode_a])
        )  # fmt: skip
        await conn.execute(
            facts.update().where(facts.c.agent_id == A, facts.c.id == loser)
            .values(derived_from=[episode_b, episode_a])
        )  # fmt: skip
    units: list[Unit] = [
        MergeUnit(winner, (loser,), 0.97, "dup", DecidedBy.RULE),
        ContradictionUnit(x, y, 0.9, "flip", DecidedBy.RULE),
    ]
    async with kernel.database.transaction() as conn:
        counts, events, skipped = await apply_units(conn, A, units, clock.now())
    assert skipped == 0 and len(events) == 4
    assert counts == {Action.MERGED: 1, Action.CONTRADICTION: 1}
    won, lost = await get(kernel, A, winner), await get(kernel, A, loser)
    assert won.status is FactStatus.ACTIVE and won.evidence_count == 3
    assert won.derived_from == (episode_a, episode_b)
    assert lost.status is FactStatus.MERGED and lost.merged_into == winner
    assert lost.valid_to == clock.now()
    halved = await get(kernel, A, x), await get(kernel, A, y)
    assert [f.confidence for f in halved] == [0.4, 0.3]
    assert halved[0].contradicts == (y,) and halved[1].contradicts == (x,)


def test_neighbour_search_does_not_depend_on_the_read_order() -> None:
    rng = np.random.default_rng(3)
    base = rng.normal(size=(600, 32)).astype(np.float32)
    twins = base[:60] + rng.normal(scale=0.05, size=(60, 32)).astype(np.float32)
    vectors = np.concatenate([base, twins])
    ids = [uuid.uuid4() for _ in range(len(vectors))]
    params = IvfParams(k=4, floor=0.9, cell_size=64, probes=4)
    results = []
    for order in (np.arange(len(ids)), rng.permutation(len(ids))):
        store = VectorStore(32)
        store.add([ids[i] for i in order], vectors[order])
        store.sort_by_id()
        results.append({(p.key, p.similarity) for p in candidate_pairs(store, params)})
    assert results[0] == results[1]
    assert len(results[0]) >= 55
