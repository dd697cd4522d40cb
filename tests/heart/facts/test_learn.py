"""Learning facts against real Postgres: the seed's supersession edge cases, dedup,
value change, contradictions, admission, bad input, concurrency and the audit trail."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from sqlalchemy import Table, func, select

from memory_kernel import MemoryKernel
from memory_kernel.errors import ValidationError
from memory_kernel.models.enums import EventKind, FactStatus
from memory_kernel.models.facts import FactInput, LearnAction
from memory_kernel.storage.tables import facts, memory_events
from memory_kernel.testing import FrozenClock

A = "agent-a"


def fact(content: str, **kw: object) -> FactInput:
    return FactInput(agent_id=str(kw.pop("agent_id", A)), content=content, **kw)


async def events_of(kernel: MemoryKernel, fact_id: uuid.UUID) -> list[str]:
    async with kernel.database.connection() as conn:
        rows = await conn.scalars(
            select(memory_events.c.event)
            .where(memory_events.c.agent_id == A, memory_events.c.memory_id == fact_id)
            .order_by(memory_events.c.created_at)
        )
        return list(rows)


async def count_rows(kernel: MemoryKernel, table: Table = facts) -> int:
    async with kernel.database.connection() as conn:
        return int(await conn.scalar(select(func.count()).select_from(table)) or 0)


async def test_same_subject_supersedes_and_keeps_history(
    kernel: MemoryKernel, clock: FrozenClock
) -> None:
    svc = kernel.heart.facts
    old = await svc.learn(fact("006 status: PLANNED", subject="006 status"))
    clock.advance(minutes=5)
    new = await svc.learn(fact("The 006 spec says it has shipped.", subject="006 status"))
    assert new.action is LearnAction.SUPERSEDED
    assert new.superseded == (old.fact.id,)
    retired = await svc.get(old.fact.id, agent_id=A)
    assert retired.status is FactStatus.SUPERSEDED
    assert retired.superseded_by == new.fact.id
    assert retired.valid_to == clock.now()
    assert EventKind.SUPERSEDED in await events_of(kernel, old.fact.id)
    assert [f.id for f in await svc.history(new.fact.id, agent_id=A)] == [
        old.fact.id,
        new.fact.id,
    ]


async def test_all_older_same_subject_facts_end_superseded(
    kernel: MemoryKernel, clock: FrozenClock
) -> None:
    svc = kernel.heart.facts
    ids = []
    for n, colour in enumerate(["red", "green", "blue"]):
        clock.advance(minutes=1)
        ids.append((await svc.learn(fact(f"The logo colour is {colour}.", subject="logo"))).fact.id)
        assert n == 0 or (await svc.get(ids[-2], agent_id=A)).superseded_by == ids[-1]
    statuses = [(await svc.get(i, agent_id=A)).status for i in ids]
    assert statuses == [FactStatus.SUPERSEDED, FactStatus.SUPERSEDED, FactStatus.ACTIVE]
    assert [f.id for f in await svc.history(ids[0], agent_id=A)] == ids


async def test_subject_match_is_case_and_whitespace_insensitive(kernel: MemoryKernel) -> None:
    svc = kernel.heart.facts
    old = await svc.learn(fact("Deploy window is Tuesday.", subject="Deploy  Window"))
    new = await svc.learn(fact("Deploys now happen on Thursdays.", subject=" deploy window "))
    assert new.superseded == (old.fact.id,)


async def test_different_subject_is_untouched(kernel: MemoryKernel) -> None:
    svc = kernel.heart.facts
    old = await svc.learn(fact("The API timeout is 30 seconds.", subject="api timeout"))
    new = await svc.learn(fact("The DB timeout is 10 seconds.", subject="db timeout"))
    assert new.action is LearnAction.ADDED
    assert (await svc.get(old.fact.id, agent_id=A)).status is FactStatus.ACTIVE


@pytest.mark.parametrize("subject", [None, "", "   "])
async def test_empty_subject_skips_subject_supersession(
    kernel: MemoryKernel, subject: str | None
) -> None:
    svc = kernel.heart.facts
    old = await svc.learn(fact("Ravi maintains the payments SDK.", subject=subject))
    new = await svc.learn(fact("Lena reviews all database migrations.", subject=subject))
    assert new.action is LearnAction.ADDED
    assert old.fact.subject_key is None
    assert (await svc.get(old.fact.id, agent_id=A)).status is FactStatus.ACTIVE


async def test_recency_beats_confidence(kernel: MemoryKernel) -> None:
    svc = kernel.heart.facts
    old = await svc.learn(fact("Budget owner is Priya.", subject="budget owner", confidence=0.99))
    new = await svc.learn(fact("Budget owner is Marco.", subject="budget owner", confidence=0.2))
    assert new.action is LearnAction.SUPERSEDED
    assert (await svc.get(old.fact.id, agent_id=A)).status is FactStatus.SUPERSEDED


async def test_superseded_facts_are_never_returned(kernel: MemoryKernel) -> None:
    svc = kernel.heart.facts
    old = await svc.learn(fact("The staging database runs Postgres 15.", subject="staging db"))
    new = await svc.learn(fact("The staging database runs Postgres 17.", subject="staging db"))
    hits = await svc.search(A, "staging database Postgres", k=10)
    assert [h.fact.id for h in hits] == [new.fact.id]
    assert old.fact.id not in {h.fact.id for h in hits}


async def test_fifty_concurrent_learns_on_one_subject(kernel: MemoryKernel) -> None:
    svc = kernel.heart.facts
    outcomes = await asyncio.gather(
        *(svc.learn(fact(f"The release train number is {n}.", subject="release train"))
          for n in range(50))
    )  # fmt: skip
    async with kernel.database.connection() as conn:
        rows = (await conn.execute(select(facts.c.id, facts.c.status, facts.c.superseded_by)
                                   .where(facts.c.agent_id == A))).all()  # fmt: skip
    assert len(rows) == 50  # nobody's write was lost
    active = [r for r in rows if r.status == FactStatus.ACTIVE.value]
    assert len(active) == 1
    assert all(r.superseded_by is not None for r in rows if r.status != FactStatus.ACTIVE.value)
    history = await svc.history(active[0].id, agent_id=A)
    assert {f.id for f in history} == {o.fact.id for o in outcomes}


async def test_value_change_without_subject_supersedes(kernel: MemoryKernel) -> None:
    svc = kernel.heart.facts
    old = await svc.learn(fact("Our cluster has 12 worker nodes."))
    new = await svc.learn(fact("Our cluster has 16 worker nodes."))
    assert new.action is LearnAction.SUPERSEDED
    assert new.superseded == (old.fact.id,)
    assert "value changed" in new.reason


async def test_paraphrase_reinforces_instead_of_duplicating(
    kernel: MemoryKernel, clock: FrozenClock
) -> None:
    svc = kernel.heart.facts
    first = await svc.learn(fact("Kai owns the deploy pipeline."))
    clock.advance(hours=1)
    again = await svc.learn(fact("The deploy pipeline is owned by Kai."))
    assert again.action is LearnAction.REINFORCED
    assert again.fact.id == first.fact.id
    assert again.fact.evidence_count == 2
    assert again.fact.confidence == pytest.approx(0.7 + 0.05 * 0.3)
    assert again.fact.last_evidence_at == clock.now()
    assert await count_rows(kernel) == 1
    assert EventKind.REINFORCED in await events_of(kernel, first.fact.id)


async def test_flipped_meaning_is_flagged_not_merged(kernel: MemoryKernel) -> None:
    svc = kernel.heart.facts
    old = await svc.learn(fact("Two-factor login is enabled for contractors."))
    new = await svc.learn(fact("Two-factor login is disabled for contractors."))
    assert new.action is LearnAction.CONTRADICTION
    assert new.contradicts == (old.fact.id,)
    linked = await svc.get(old.fact.id, agent_id=A)
    assert linked.contradicts == (new.fact.id,) and linked.status is FactStatus.ACTIVE
    assert new.fact.contradicts == (old.fact.id,)
    assert EventKind.CONTRADICTION in await events_of(kernel, new.fact.id)


async def test_filler_is_rejected_unless_explicit(kernel: MemoryKernel) -> None:
    svc = kernel.heart.facts
    rejected = await svc.learn(fact("Okay, sounds good."))
    assert rejected.action is LearnAction.REJECTED
    assert rejected.fact.status is FactStatus.REJECTED
    assert await events_of(kernel, rejected.fact.id) == [EventKind.REJECTED]
    assert await svc.search(A, "sounds good", k=5) == []
    kept = await svc.learn(fact("Okay, sounds good.", explicit=True))
    assert kept.action is LearnAction.ADDED


@pytest.mark.parametrize(
    "kwargs",
    [{"content": ""}, {"content": "   \n"}, {"content": "a\x00b"},
     {"content": "x" * (64 * 1024 + 1)}, {"content": "ok fact", "confidence": 1.5},
     {"content": "ok fact", "confidence": -0.1}, {"content": "ok fact", "agent_id": "has space"},
     {"content": "ok fact", "agent_id": ""}],
)  # fmt: skip
async def test_bad_input_raises_and_writes_nothing(
    kernel: MemoryKernel, kwargs: dict[str, object]
) -> None:
    with pytest.raises(ValidationError):
        await kernel.heart.facts.learn(FactInput(**{"agent_id": A, **kwargs}))
    assert await count_rows(kernel) == 0
    assert await count_rows(kernel, memory_events) == 0


async def test_every_change_writes_an_event(kernel: MemoryKernel) -> None:
    svc = kernel.heart.facts
    await svc.learn(fact("The VPN endpoint is vpn1.example.com.", subject="vpn"))
    await svc.learn(fact("The VPN endpoint is vpn2.example.com.", subject="vpn"))
    async with kernel.database.connection() as conn:
        kinds = list(await conn.scalars(select(memory_events.c.event)))
    assert sorted(kinds) == sorted([EventKind.LEARNED, EventKind.LEARNED, EventKind.SUPERSEDED])


async def test_agents_are_isolated(kernel: MemoryKernel) -> None:
    svc = kernel.heart.facts
    mine = await svc.learn(fact("The office wifi password rotates monthly.", subject="wifi"))
    other = await svc.learn(
        fact("The office wifi password rotates weekly.", subject="wifi", agent_id="agent-b")
    )
    assert other.action is LearnAction.ADDED
    assert (await svc.get(mine.fact.id, agent_id=A)).status is FactStatus.ACTIVE
    assert [h.fact.id for h in await svc.search("agent-b", "wifi password", k=5)] == [other.fact.id]
