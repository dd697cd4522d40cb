"""Stale values are never presented as current: a recalled turn or episode that states a
value a recalled current fact replaced is ranked under that fact, linked to it and shown
dated with a note (``context.stale``); the pure rule first, then through the hooks on real
Postgres."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from memory_kernel import MemoryKernel
from memory_kernel.context.stale import demote_replaced, states_replaced
from memory_kernel.models.context import MemoryHit, MemorySource
from memory_kernel.models.facts import FactInput
from memory_kernel.models.turns import TurnInput, TurnOutcome
from memory_kernel.testing import FrozenClock

T0 = datetime(2026, 1, 1, tzinfo=UTC)
OLD = "Spec 006 status: PLANNED"
NEW = "Spec 006 status: Shipped"
SAID = "Standup notes: the team says spec 006 is still PLANNED for the next sprint."


def test_a_text_states_the_replaced_value_of_the_same_subject() -> None:
    assert states_replaced(SAID, NEW, OLD)
    assert not states_replaced("Spec 007 is PLANNED for June.", NEW, OLD)  # other subject
    assert not states_replaced("Spec 006 status review on Monday.", NEW, OLD)  # no old value
    assert not states_replaced(SAID, NEW, NEW)  # nothing was replaced


def _hit(source: MemorySource, text: str, score: float, at: datetime, **kw: object) -> MemoryHit:
    return MemoryHit(
        source=source, id=uuid.uuid4(), text=text, similarity=score, confidence=0.7, recency=1.0,
        score=score, created_at=at, **kw,
    )  # fmt: skip


def test_an_older_turn_with_the_replaced_value_ranks_under_the_fact() -> None:
    fact = _hit(MemorySource.FACT, NEW, 0.60, T0 + timedelta(days=2), supersedes=(OLD,))
    stale = _hit(MemorySource.TURN, SAID, 0.80, T0)
    later = _hit(MemorySource.TURN, SAID, 0.75, T0 + timedelta(days=3))  # said again since
    other = _hit(MemorySource.TURN, "Spec 007 is PLANNED.", 0.70, T0)
    ranked = demote_replaced([stale, later, other, fact])
    assert [h.id for h in ranked] == [later.id, other.id, fact.id, stale.id]
    assert ranked[-1].replaced_by == fact.id and ranked[-1].score < fact.score
    assert all(h.replaced_by is None for h in ranked[:-1])


async def test_through_the_hooks_the_current_fact_comes_first_and_the_turn_is_noted(
    kernel: MemoryKernel, clock: FrozenClock
) -> None:
    agent = "stale-agent"
    await kernel.heart.facts.learn(FactInput(agent_id=agent, content=OLD, subject="spec 006"))
    ctx = await kernel.pre_turn(TurnInput(agent_id=agent, session_id="s1", message=SAID))
    await kernel.post_turn(ctx.turn, TurnOutcome(response_text="Thanks for the update."))
    await kernel.end_session(agent, "s1")
    clock.advance(timedelta(days=1))
    await kernel.heart.facts.learn(FactInput(agent_id=agent, content=NEW, subject="spec 006"))
    clock.advance(timedelta(days=1))
    question = "What is the status of spec 006 for the sprint?"
    hits = await kernel.search_memory(agent, question, search_type="all", limit=10)
    assert hits[0].text == NEW and hits[0].supersedes == (OLD,)
    stale = [h for h in hits if "PLANNED" in h.text]
    assert stale and all(h.replaced_by == hits[0].id for h in stale)
    asked = await kernel.pre_turn(TurnInput(agent_id=agent, session_id="s2", message=question))
    lines = asked.text.splitlines()
    assert f"- {NEW}" in lines
    stated = [n for n, line in enumerate(lines) if "PLANNED" in line]
    assert stated
    for n in stated:  # a turn and an episode each open with their date; both noted
        assert lines[n].startswith("- [1 January 2026]")
        assert lines[n].endswith(f"(later replaced: {NEW})")
