"""The extraction queue, end to end on a real PostgreSQL: post_turn queues the exchange in its
unit of work, drains (extract_pending, consolidate, the worker) learn the facts with their
provenance, failures are retried with backoff and parked, never lost or learned twice."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta
from typing import Any

from sqlalchemy import select

from memory_kernel import MemoryKernel, MemoryKernelConfig, NotFoundError
from memory_kernel.heart.extraction import RuleExtractor
from memory_kernel.models.consolidation import ConsolidationAction
from memory_kernel.models.enums import FactStatus
from memory_kernel.models.facts import Fact
from memory_kernel.models.turns import TurnContext, TurnInput, TurnOutcome
from memory_kernel.storage.tables import facts
from memory_kernel.testing import FakeEmbedder, FakeExtractor, FrozenClock
from tests.heart.extraction.conftest import queue_config, queue_rows

AGENT = "agent-x"


async def _turn(
    kernel: MemoryKernel, message: str, reply: str = "Noted.", *, session: str = "s1"
) -> TurnContext:
    ctx = await kernel.pre_turn(TurnInput(agent_id=AGENT, session_id=session, message=message))
    await kernel.post_turn(ctx.turn, TurnOutcome(response_text=reply))
    return ctx


async def _facts(kernel: MemoryKernel, *statuses: FactStatus) -> list[Fact]:
    wanted = [s.value for s in statuses] or [FactStatus.ACTIVE.value]
    async with kernel.database.connection() as conn:
        ids = (
            await conn.scalars(
                select(facts.c.id)
                .where(facts.c.agent_id == AGENT, facts.c.status.in_(wanted))
                .order_by(facts.c.created_at, facts.c.id)
            )
        ).all()
    return [await kernel.heart.facts.get(i, agent_id=AGENT) for i in ids]


async def test_post_turn_queues_the_message_and_the_reply(xkernel: MemoryKernel) -> None:
    await _turn(xkernel, "My city is Paris.", "Paris is lovely.")
    rows = await queue_rows(xkernel)
    assert len(rows) == 2
    assert all(r.attempts == 0 and r.claim is None and r.parked_at is None for r in rows)
    stored = {r.id: r.role for r in await _stored_turns(xkernel)}
    assert sorted(stored[r.turn_id] for r in rows) == ["assistant", "user"]


async def _stored_turns(kernel: MemoryKernel) -> list[Any]:
    from memory_kernel.storage.tables import turns

    async with kernel.database.connection() as conn:
        return list((await conn.execute(select(turns.c.id, turns.c.role))).all())


async def test_a_failed_post_turn_queues_nothing(xkernel: MemoryKernel) -> None:
    ctx = await xkernel.pre_turn(
        TurnInput(agent_id=AGENT, session_id="s1", message="My city is Paris.")
    )
    broken = ctx.turn.model_copy(update={"episode_id": uuid.uuid4()})  # fails the turn last
    try:
        await xkernel.post_turn(broken, TurnOutcome(response_text="Noted."))
    except NotFoundError:
        pass
    else:
        raise AssertionError("post_turn with an unknown episode must fail")
    assert await queue_rows(xkernel) == []
    assert await _stored_turns(xkernel) == []


async def test_a_retried_post_turn_queues_once(xkernel: MemoryKernel) -> None:
    ctx = await xkernel.pre_turn(
        TurnInput(agent_id=AGENT, session_id="s1", message="My city is Paris.")
    )
    for _ in range(2):
        await xkernel.post_turn(ctx.turn, TurnOutcome(response_text="Noted."))
    assert len(await queue_rows(xkernel)) == 2


async def test_without_an_extractor_or_disabled_nothing_is_queued(
    pg_dsn: str, drop_schema: str, clock: FrozenClock, embedder: FakeEmbedder
) -> None:
    for extractor, enabled in ((None, True), (FakeExtractor(), False)):
        config = queue_config(drop_schema, enabled=enabled)
        async with MemoryKernel.open(
            pg_dsn, config=config, clock=clock, embedder=embedder, extractor=extractor
        ) as kernel:
            await _turn(kernel, "My city is Paris.")
            assert await queue_rows(kernel) == []
            report = await kernel.extract_pending()
            assert report.turns == 0


async def test_extracted_facts_carry_their_provenance(
    xkernel: MemoryKernel, extractor: FakeExtractor
) -> None:
    ctx = await _turn(xkernel, "Hello! My favourite colour is green, by the way.")
    report = await xkernel.extract_pending(AGENT)
    assert report.turns == 2 and report.facts == {"added": 1} and report.failed == 0
    assert await queue_rows(xkernel) == []
    (fact,) = await _facts(xkernel)
    assert fact.content == "The user's favourite colour is green."
    assert fact.subject == "user favourite colour" and fact.confidence == 0.8
    assert fact.derived_from == (ctx.turn.episode_id,)
    (user_turn,) = [r for r in await _stored_turns(xkernel) if r.role == "user"]
    assert fact.metadata == {
        "source": "extraction",
        "turn_id": str(user_turn.id),
        "session_id": "s1",
        "role": "user",
        "said_at": ctx.turn.started_at.isoformat(),
        "extractor": "fake-extractor",
    }
    # One call for the exchange, oldest first: the message, then the reply.
    (batch,) = extractor.batches
    assert batch[0] == user_turn.id and len(batch) == 2


async def test_a_newer_value_of_the_same_subject_supersedes(
    xkernel: MemoryKernel, clock: FrozenClock
) -> None:
    await _turn(xkernel, "My city is Paris.")
    clock.advance(timedelta(days=3))
    await _turn(xkernel, "Some news: my city is London now.", session="s2")
    await xkernel.extract_pending()
    (current,) = await _facts(xkernel)
    (old,) = await _facts(xkernel, FactStatus.SUPERSEDED)
    assert current.content == "The user's city is London now."
    assert old.content == "The user's city is Paris." and old.superseded_by == current.id


async def test_a_drain_again_learns_nothing_twice(
    xkernel: MemoryKernel, extractor: FakeExtractor
) -> None:
    await _turn(xkernel, "My city is Paris.")
    first = await xkernel.extract_pending()
    second = await xkernel.extract_pending()
    assert first.turns == 2 and second.turns == 0 and extractor.calls == 1
    assert len(await _facts(xkernel, *FactStatus)) == 1


async def test_a_failing_extractor_keeps_the_turns_and_retries_with_backoff(
    xkernel: MemoryKernel, extractor: FakeExtractor, clock: FrozenClock
) -> None:
    await _turn(xkernel, "My city is Paris.")
    extractor.fail = RuntimeError("model down")
    report = await xkernel.extract_pending()
    assert report.turns == 0 and report.failed == 2 and report.parked == 0
    assert "model down" in report.errors[0]
    rows = await queue_rows(xkernel)
    assert [r.attempts for r in rows] == [1, 1]
    assert all("model down" in r.last_error and r.claim is None for r in rows)
    assert (await xkernel.inspect(AGENT)).extraction.retrying == 2
    extractor.fail = None
    assert (await xkernel.extract_pending()).turns == 0  # still backing off
    clock.advance(timedelta(seconds=31))
    assert (await xkernel.extract_pending()).turns == 2
    assert len(await _facts(xkernel)) == 1 and await queue_rows(xkernel) == []


async def test_a_poison_turn_is_isolated_and_parked_the_rest_is_learned(
    pg_dsn: str, drop_schema: str, clock: FrozenClock, embedder: FakeEmbedder
) -> None:
    extractor = FakeExtractor()
    extractor.fail_on = "POISON"
    config = queue_config(drop_schema, batch_size=4, max_attempts=3, backoff_first_s=1)
    async with MemoryKernel.open(
        pg_dsn, config=config, clock=clock, embedder=embedder, extractor=extractor
    ) as kernel:
        await _turn(kernel, "My city is Paris.", "")
        await _turn(kernel, "POISON my pet is Rex.", "")
        await _turn(kernel, "My job is pilot.", "")
        total, parked = 0, 0
        for _ in range(10):
            report = await kernel.extract_pending()
            total, parked = total + report.turns, parked + report.parked
            clock.advance(timedelta(hours=1))
        assert total == 2 and parked == 1
        # The batch halved until the poison turn was alone: 4 -> 2 -> 1.
        assert [len(b) for b in extractor.batches[:3]] == [3, 2, 1]
        contents = sorted(f.content for f in await _facts(kernel))
        assert contents == ["The user's city is Paris.", "The user's job is pilot."]
        state = (await kernel.inspect(AGENT)).extraction
        assert (state.queued, state.parked) == (0, 1) and "POISON" in (state.last_error or "")
        # The extractor fixed, the host queues the parked turn again: it is learned once.
        extractor.fail_on = None
        assert await kernel.retry_parked_extractions(AGENT) == 1
        assert await kernel.retry_parked_extractions(AGENT) == 0  # nothing parked now
        assert (await kernel.extract_pending()).turns == 1
        assert len(await _facts(kernel)) == 3 and await queue_rows(kernel) == []


async def test_turns_are_learned_in_the_order_they_were_said(
    xkernel: MemoryKernel, extractor: FakeExtractor, clock: FrozenClock
) -> None:
    """A failing older turn holds up the agent's newer ones: a newer value learned first
    would otherwise be replaced by the older one when it is retried."""
    await _turn(xkernel, "My city is Paris.")
    extractor.fail = RuntimeError("down")
    await xkernel.extract_pending()
    extractor.fail = None
    clock.advance(timedelta(seconds=5))
    await _turn(xkernel, "My city is London.", session="s2")
    assert (await xkernel.extract_pending()).turns == 0  # Paris is not due: London waits
    clock.advance(timedelta(minutes=5))
    assert (await xkernel.extract_pending()).turns == 4
    (current,) = await _facts(xkernel)
    assert current.content == "The user's city is London."


async def test_consolidate_drains_the_agents_queue_first(xkernel: MemoryKernel) -> None:
    await _turn(xkernel, "My city is Paris.")
    report = await xkernel.consolidate(AGENT)
    (agent,) = report.agents
    assert agent.counts.get(ConsolidationAction.EXTRACTED) == 2
    assert await queue_rows(xkernel) == [] and len(await _facts(xkernel)) == 1
    dry = await xkernel.consolidate(AGENT, dry_run=True)
    assert ConsolidationAction.EXTRACTED not in dry.agents[0].counts


async def test_the_background_worker_drains_the_queue(
    pg_dsn: str, drop_schema: str, clock: FrozenClock, embedder: FakeEmbedder
) -> None:
    config = queue_config(drop_schema, worker=True, worker_poll_s=0.05)
    extractor = FakeExtractor()
    async with MemoryKernel.open(
        pg_dsn, config=config, clock=clock, embedder=embedder, extractor=extractor
    ) as kernel:
        await _turn(kernel, "My city is Paris.")
        for _ in range(200):
            if not await queue_rows(kernel):
                break
            await asyncio.sleep(0.05)
        assert await queue_rows(kernel) == []
        assert [f.content for f in await _facts(kernel)] == ["The user's city is Paris."]


def test_extraction_is_configured_in_its_own_section() -> None:
    config = MemoryKernelConfig.from_mapping({"extraction": {"batch_size": 8}})
    assert config.extraction.batch_size == 8 and config.extraction.enabled


async def test_short_self_disclosures_become_facts_through_the_hooks(
    pg_dsn: str, drop_schema: str, clock: FrozenClock, embedder: FakeEmbedder
) -> None:
    """The rule extractor's "The user …" wording of a short first-person statement reaches
    memory (admission rejected it as not specific; one word alone was not extracted), and a
    passing state does not."""
    said = {
        "I'm allergic to penicillin.": "The user is allergic to penicillin.",
        "I'm vegetarian.": "The user is vegetarian.",
        "I'm a software engineer.": "The user is a software engineer.",
        "I hate cilantro.": "The user hates cilantro.",
        "We have a dog.": "We have a dog.",
    }
    config = queue_config(drop_schema)
    async with MemoryKernel.open(
        pg_dsn, config=config, clock=clock, embedder=embedder, extractor=RuleExtractor()
    ) as kernel:
        for number, message in enumerate([*said, "I'm so tired today."]):
            await _turn(kernel, message, session=f"s{number}")
        await kernel.extract_pending()
        assert sorted(f.content for f in await _facts(kernel)) == sorted(said.values())
