"""Read-time resolution of a slot with two current values (``context.current``): of two
recalled facts that give one slot two values, the newer one reads as current and the older
one, with the turns that state it, is ranked under it and shown dated. The pure rule
first, then through the hooks on real Postgres with a pair the write path keeps both of."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from memory_kernel import MemoryKernel
from memory_kernel.context.current import resolve_current
from memory_kernel.context.stale import REPLACED_NOTE
from memory_kernel.models.context import MemoryHit, MemorySource
from memory_kernel.models.facts import FactInput, LearnAction
from memory_kernel.models.turns import TurnInput, TurnOutcome
from memory_kernel.testing import FrozenClock

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _hit(source: MemorySource, text: str, score: float, day: int) -> MemoryHit:
    return MemoryHit(
        source=source, id=uuid.uuid4(), text=text, similarity=score, confidence=0.7,
        recency=1.0, score=score, created_at=T0 + timedelta(days=day),
    )  # fmt: skip


def test_the_newest_value_of_a_slot_wins_and_the_older_ones_are_linked_to_it() -> None:
    first = _hit(MemorySource.FACT, "standup at 9:00", 0.9, 0)
    second = _hit(MemorySource.FACT, "standup at 9:15", 0.8, 1)
    newest = _hit(MemorySource.FACT, "standup at 10:00", 0.5, 2)
    other = _hit(MemorySource.FACT, "deploys on Fridays", 0.7, 3)
    turn = _hit(MemorySource.TURN, "standup at 9:00", 0.95, 0)
    slot = {first.id, second.id, newest.id}

    def updates(old: MemoryHit, new: MemoryHit) -> bool:
        return old.id in slot and new.id in slot  # one slot; "newer" is decided by the rule

    out = resolve_current([turn, first, second, other, newest], updates=updates)
    assert [h.id for h in out][:3] == [turn.id, other.id, newest.id]
    assert {h.id for h in out[3:]} == {first.id, second.id}  # both just under the newest
    by_id = {h.id: h for h in out}
    assert by_id[first.id].replaced_by == newest.id == by_id[second.id].replaced_by  # the head
    assert by_id[first.id].score < by_id[newest.id].score > by_id[second.id].score
    assert set(by_id[newest.id].supersedes) == {first.text, second.text}
    assert by_id[newest.id].replaced_by is None and by_id[other.id].replaced_by is None
    assert by_id[turn.id] == turn  # turns are context.stale's part, not this rule's


def test_nothing_changes_without_an_update_or_with_one_fact() -> None:
    a, b = _hit(MemorySource.FACT, "a", 0.9, 0), _hit(MemorySource.FACT, "b", 0.8, 1)
    assert resolve_current([a, b], updates=lambda _o, _n: False) == [a, b]
    assert resolve_current([a], updates=lambda _o, _n: True) == [a]
    # The older one never replaces the newer one, whatever ``updates`` says.
    out = resolve_current([a, b], updates=lambda o, n: (o.id, n.id) == (b.id, a.id))
    assert out == [a, b]


# A pair the write path is not sure enough to supersede (both stay current), but the read
# scorer is, for the question asked (heart/facts/read_resolution.py).
OLD = "Our team standup is at 9:15."
NEW = "Small logistics thing: the standup got pushed to 10:00 so the Denver folks can join."
SAID = "Reminder for the new hires: our team standup is at 9:15."
QUESTION = "When is the team standup?"


async def test_through_the_hooks_the_newer_fact_reads_as_current(
    kernel: MemoryKernel, clock: FrozenClock
) -> None:
    agent = "slot-agent"
    facts = kernel.heart.facts
    old = await facts.learn(FactInput(agent_id=agent, content=OLD))
    ctx = await kernel.pre_turn(TurnInput(agent_id=agent, session_id="s1", message=SAID))
    await kernel.post_turn(ctx.turn, TurnOutcome(response_text="Noted."))
    clock.advance(timedelta(days=1))
    new = await facts.learn(FactInput(agent_id=agent, content=NEW))
    assert new.action is LearnAction.ADDED  # both current: only reading can resolve them
    assert (await facts.get(old.fact.id, agent_id=agent)).is_current
    clock.advance(timedelta(days=1))

    hits = await kernel.search_memory(agent, QUESTION, search_type="all", limit=10)
    first_fact = next(h for h in hits if h.source is MemorySource.FACT)
    assert first_fact.id == new.fact.id and OLD in first_fact.supersedes
    rank = {h.id: n for n, h in enumerate(hits)}
    for h in hits:
        if h.id == old.fact.id or (h.source is MemorySource.TURN and "9:15" in h.text):
            assert h.replaced_by == new.fact.id and rank[h.id] > rank[new.fact.id]

    asked = await kernel.pre_turn(TurnInput(agent_id=agent, session_id="s2", message=QUESTION))
    lines = asked.text.splitlines()
    assert f"- {NEW}" in lines  # current: undated
    stale = [line for line in lines if "9:15" in line]
    assert stale  # the turn at least (nothing is hidden)
    note = REPLACED_NOTE.format(current=NEW)
    for line in stale:  # every line with the old value is dated and noted
        assert line.startswith("- [1 January 2026]") and line.endswith(note)
