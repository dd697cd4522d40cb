"""learn_many equals learn in order; pending facts (deferred or embedder down) are found by
text and settled by embed_pending; search, history and as_of views."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import text

from memory_kernel import MemoryKernel
from memory_kernel.errors import NotFoundError, ValidationError
from memory_kernel.models.enums import FactStatus
from memory_kernel.models.facts import FactInput, FactMatch, LearnAction
from memory_kernel.testing import FakeEmbedder, FrozenClock

A = "agent-a"

SCRIPT = [
    ("The nightly export runs at 01:00 UTC.", None),
    ("The nightly export runs at 02:00 UTC.", None),
    ("The nightly export runs at 2:00 UTC.", None),
    ("Hello!", None),
    ("Mina leads the mobile team.", "mobile lead"),
    ("Joe leads the mobile team.", "Mobile Lead"),
    ("Feature previews are enabled for beta users.", None),
    ("Feature previews are disabled for beta users.", None),
    ("Our error budget is 0.1% per month.", None),
    ("Our error budget is 0.1% per month.", None),
]


def _inputs(agent: str) -> list[FactInput]:
    return [FactInput(agent_id=agent, content=c, subject=s) for c, s in SCRIPT]


async def _final(kernel: MemoryKernel, agent: str) -> list[tuple[str, str, int]]:
    facts = await kernel.heart.facts.as_of(agent, kernel.clock.now() - timedelta(days=3650))
    everything = await kernel.heart.facts.search(agent, "export mobile previews budget", k=50)
    del facts
    return sorted((h.fact.content, h.fact.status.value, h.fact.evidence_count) for h in everything)


async def test_learn_many_equals_learn_one_by_one(kernel: MemoryKernel) -> None:
    svc = kernel.heart.facts
    one_by_one = [await svc.learn(f) for f in _inputs("seq")]
    batched = await svc.learn_many(_inputs("bat"))
    assert [o.action for o in batched] == [o.action for o in one_by_one]
    assert [len(o.superseded) for o in batched] == [len(o.superseded) for o in one_by_one]
    assert await _final(kernel, "bat") == await _final(kernel, "seq")
    actions = [o.action for o in batched]
    assert actions[1] is LearnAction.SUPERSEDED and actions[2] is LearnAction.REINFORCED
    assert actions[3] is LearnAction.REJECTED and actions[5] is LearnAction.SUPERSEDED
    assert actions[7] is LearnAction.CONTRADICTION and actions[9] is LearnAction.REINFORCED


async def test_embedder_failure_stores_pending_found_by_text(
    kernel: MemoryKernel, embedder: FakeEmbedder
) -> None:
    svc = kernel.heart.facts
    embedder.fail = RuntimeError("embedding API down")
    out = await svc.learn(
        FactInput(agent_id=A, content="The invoice archive lives in bucket inv-7.")
    )
    assert out.pending_embedding and out.fact.status is FactStatus.PENDING_EMBED
    again = await svc.learn(
        FactInput(agent_id=A, content="The invoice archive lives in bucket inv-7")
    )
    assert again.action is LearnAction.REINFORCED  # exact restatement, even without vectors
    hits = await svc.search(A, "invoice archive bucket", k=5)
    assert [(h.fact.id, h.matched_by) for h in hits] == [(out.fact.id, FactMatch.TEXT)]
    embedder.fail = None
    report = await svc.embed_pending(A)
    assert report.embedded == 1
    hits = await svc.search(A, "invoice archive bucket", k=5)
    assert [(h.fact.id, h.matched_by) for h in hits] == [(out.fact.id, FactMatch.VECTOR)]


async def test_deferred_facts_get_checked_when_embedded(
    kernel: MemoryKernel, clock: FrozenClock
) -> None:
    svc = kernel.heart.facts
    old = await svc.learn(FactInput(agent_id=A, content="The build cache holds 20 GB."))
    clock.advance(minutes=1)
    new = await svc.learn(
        FactInput(agent_id=A, content="The build cache holds 50 GB.", defer_embedding=True)
    )
    assert new.action is LearnAction.ADDED and new.pending_embedding
    dup = await svc.learn(
        FactInput(agent_id=A, content="Build cache holds 50 GB.", defer_embedding=True)
    )
    report = await svc.embed_pending()
    assert (report.embedded, report.merged, report.superseded) == (1, 1, 1)
    assert (await svc.get(old.fact.id, agent_id=A)).superseded_by == new.fact.id
    current = await svc.get(new.fact.id, agent_id=A)
    assert current.status is FactStatus.ACTIVE and current.evidence_count == 2
    merged = await svc.get(dup.fact.id, agent_id=A)
    assert merged.status is FactStatus.MERGED and merged.merged_into == new.fact.id


async def test_pending_facts_take_part_in_subject_supersession(kernel: MemoryKernel) -> None:
    svc = kernel.heart.facts
    old = await svc.learn(
        FactInput(agent_id=A, content="Oncall is Sam.", subject="oncall", defer_embedding=True)
    )
    new = await svc.learn(FactInput(agent_id=A, content="Oncall is Ivy.", subject="oncall"))
    assert new.superseded == (old.fact.id,)


async def test_search_filters_confidence_and_validates(kernel: MemoryKernel) -> None:
    svc = kernel.heart.facts
    await svc.learn(FactInput(agent_id=A, content="Zed rides a red bike.", confidence=0.2))
    strong = await svc.learn(FactInput(agent_id=A, content="Zed rides a blue bike to work daily."))
    hits = await svc.search(A, "Zed bike", k=5, min_confidence=0.5)
    assert [h.fact.id for h in hits] == [strong.fact.id]
    with pytest.raises(ValidationError):
        await svc.search(A, "", k=5)
    with pytest.raises(ValidationError):
        await svc.search(A, "bike", k=0)
    with pytest.raises(ValidationError):
        await svc.search(A, "bike", min_confidence=2.0)


async def test_as_of_returns_what_was_valid_then(kernel: MemoryKernel, clock: FrozenClock) -> None:
    svc = kernel.heart.facts
    t0 = clock.now()
    old = await svc.learn(FactInput(agent_id=A, content="HQ is in Oslo.", subject="hq"))
    clock.advance(days=10)
    new = await svc.learn(FactInput(agent_id=A, content="HQ moved to Bergen.", subject="hq"))
    assert [f.id for f in await svc.as_of(A, t0 + timedelta(days=1))] == [old.fact.id]
    assert [f.id for f in await svc.as_of(A, clock.now())] == [new.fact.id]
    assert await svc.as_of(A, t0 - timedelta(seconds=1)) == []
    with pytest.raises(ValidationError):
        await svc.as_of(A, t0.replace(tzinfo=None))


async def test_history_and_get_are_scoped_by_agent(kernel: MemoryKernel) -> None:
    svc = kernel.heart.facts
    out = await svc.learn(FactInput(agent_id=A, content="Billing runs on the 3rd."))
    assert [f.id for f in await svc.history(out.fact.id, agent_id=A)] == [out.fact.id]
    with pytest.raises(NotFoundError):
        await svc.history(out.fact.id, agent_id="someone-else")
    with pytest.raises(NotFoundError):
        await svc.get(out.fact.id, agent_id="someone-else")


async def test_learn_composes_with_the_callers_transaction(kernel: MemoryKernel) -> None:
    svc = kernel.heart.facts
    async with kernel.database.transaction() as conn:
        before = await conn.scalar(text("SELECT current_setting('enable_seqscan')"))
        out = await svc.learn(FactInput(agent_id=A, content="Ops standup is at 09:30."))
        after = await conn.scalar(text("SELECT current_setting('enable_seqscan')"))
    assert before == after  # the learn path leaves the caller's planner settings alone
    assert (await svc.get(out.fact.id, agent_id=A)).status is FactStatus.ACTIVE


async def test_learn_in_a_callers_unit_rolls_back_with_it(kernel: MemoryKernel) -> None:
    svc = kernel.heart.facts
    learned = []

    async def caller() -> None:
        async with kernel.database.transaction():
            out = await svc.learn(FactInput(agent_id=A, content="Ops standup is at 09:30."))
            learned.append(out.fact.id)
            raise RuntimeError("the caller's unit fails after the learn")

    with pytest.raises(RuntimeError):
        await caller()
    with pytest.raises(NotFoundError):
        await svc.get(learned[0], agent_id=A)
