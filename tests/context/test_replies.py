"""A recalled turn that asks is shown with the turn that answered it (``context.replies``):
the pure rule first, then through the hooks on real Postgres."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from memory_kernel import MemoryKernel
from memory_kernel.context.budget import assemble
from memory_kernel.context.replies import answers, asks, untold
from memory_kernel.context.tokens import EstimatingTokenCounter
from memory_kernel.heart.turns.store import StoredTurn
from memory_kernel.models.context import ContextItem, MemoryHit, MemorySource, NodeContent, Tier
from memory_kernel.models.turns import TurnInput
from memory_kernel.testing import FrozenClock
from tests.context.exchanges import ask_later, exchange


def test_a_shown_part_asks_when_a_sentence_ends_with_a_question_mark() -> None:
    assert asks("Wow, sounds wonderful! What concert was it?")
    assert asks('Did you read "Dune?" I loved it.')
    assert asks("Which one (the blue?) Tell me.")
    assert not asks("It was Matt Patterson, he is so talented!")
    assert not asks("The query param ?id=3 was missing.")


async def test_a_recalled_question_is_shown_with_its_short_answer(
    kernel: MemoryKernel, clock: FrozenClock
) -> None:
    agent = "replies-agent"
    await exchange(
        kernel, agent,
        "We celebrated my daughter's birthday with a concert last night.",
        "Wow, sounds wonderful! Which singer performed at the birthday concert?",
    )  # fmt: skip
    # The answer is the next exchange's message: it shares no word with the question below.
    await exchange(kernel, agent, "It was Matt Patterson, so talented!", "Lovely.")
    await exchange(
        kernel, agent,
        "Tell me about your garden instead, what grows there?",
        "Tomatoes mostly. " + "The soil is clay and it holds water for weeks. " * 12,
    )  # fmt: skip
    asked = await ask_later(
        kernel, agent, "Which singer performed at the birthday concert?", after=timedelta(days=1)
    )
    turns = [line for line in asked.splitlines() if "] assistant: " in line]
    lines = [line for line in turns if "Which singer performed" in line]
    assert lines, asked
    assert "→ user: It was Matt Patterson, so talented!" in lines[0]


async def test_a_long_answer_is_not_attached(kernel: MemoryKernel, clock: FrozenClock) -> None:
    agent = "replies-long"
    advice = "Tomatoes mostly. " + "The soil is clay and it holds water for weeks. " * 12
    await exchange(kernel, agent, "What should I grow in my garden this year?", advice)
    await kernel.end_session(agent, "s1")
    clock.advance(timedelta(days=1))
    asked = await kernel.pre_turn(
        TurnInput(agent_id=agent, session_id="s2", message="What grows in my garden?")
    )
    question = [line for line in asked.text.splitlines() if "What should I grow" in line]
    assert question and "→" not in question[0]


def _said(role: str, content: str) -> StoredTurn:
    return StoredTurn(uuid.uuid4(), role, content, datetime(2026, 1, 1, tzinfo=UTC))


ASKED = _said("user", "Wow! How did they react when they saw it?")
TOLD = _said("assistant", "They were awestruck and humbled.")


def test_a_turn_followed_by_a_question_about_it_is_shown_with_its_answer() -> None:
    memorial = "We visited a military memorial with the kids last week."
    assert answers(memorial, [ASKED, TOLD], max_chars=400) == [ASKED, TOLD]
    # An asking turn gets its reply only; a statement followed by a statement, nothing.
    assert answers("Did you go?", [TOLD, ASKED], max_chars=400) == [TOLD]
    assert answers(memorial, [TOLD, ASKED], max_chars=400) == []
    assert answers(memorial, [ASKED], max_chars=400) == []  # the question got no answer
    # A longer exchange is a document of its own; an excerpt of a long turn is not a chat.
    assert answers(memorial, [ASKED, TOLD], max_chars=60) == []
    assert answers(memorial, [ASKED, TOLD], max_chars=400, whole=False) == []


async def test_a_recalled_turn_is_shown_with_the_answer_to_the_question_it_raised(
    kernel: MemoryKernel, clock: FrozenClock
) -> None:
    agent = "follow-up-agent"
    await exchange(
        kernel, agent,
        "Last week we took the kids to the military memorial downtown.",
        "That's moving! How did they react when they saw it?",
    )  # fmt: skip
    # The answer shares no word with the question below: only the follow-up brings it.
    await exchange(kernel, agent, "Awestruck and humbled, all three.", "Lovely.")
    asked = await ask_later(
        kernel, agent, "How did the kids feel at the military memorial?", after=timedelta(days=1)
    )
    lines = [line for line in asked.splitlines() if "] user: Last week we took" in line]
    assert lines, asked
    assert (
        "downtown. → assistant: That's moving! How did they react when they saw it? "
        "→ user: Awestruck and humbled, all three." in lines[0]
    ), lines[0]


async def test_a_turn_told_on_a_better_line_is_not_shown_again(
    kernel: MemoryKernel, clock: FrozenClock
) -> None:
    agent = "told-once-agent"
    question = "That's moving! How did the kids react at the military memorial?"
    await exchange(
        kernel, agent, "Last week we took the kids to the military memorial downtown.", question
    )
    await exchange(kernel, agent, "Awestruck and humbled, all three.", "Lovely.")
    asked = await ask_later(
        kernel, agent, "How did the kids feel at the military memorial?", after=timedelta(days=1)
    )
    # Both turns are recalled, and the better line tells the other (the question with its
    # answer, the statement with the question and its answer, or the episode): once each.
    asked_back = "How did the kids react at the military memorial?"
    for said in ("took the kids to the military memorial", asked_back, "Awestruck and humbled"):
        assert asked.count(said) == 1, asked


def _item(source: MemorySource, text: str, score: float, **meta: str) -> ContextItem:
    hit = MemoryHit(
        source=source, id=uuid.uuid4(), text=text, similarity=score, confidence=0.7,
        recency=1.0, score=score, created_at=datetime(2026, 1, 1, tzinfo=UTC), metadata=meta,
    )  # fmt: skip
    return ContextItem(text=text, hit=hit)


REPLY_TEXT = "Use PostgreSQL for the orders service, it already runs in production."
PAIR = f"Which database for orders? → assistant: {REPLY_TEXT}"


def test_a_reply_a_recalled_decision_was_drafted_from_is_taken_off_its_question() -> None:
    pair = _item(MemorySource.TURN, PAIR, 0.9, answered_by=REPLY_TEXT, line_alone="Which database?")
    turns = NodeContent(node="turns", title="T", tier=Tier.STREAMED, items=(pair,))
    decision = _item(MemorySource.DECISION, "Use PostgreSQL for the orders service", 0.8)
    decided = NodeContent(node="decisions", title="D", tier=Tier.STREAMED, items=(decision,))
    assert untold([turns])[0].items[0].text == PAIR  # no memory tells it: kept
    assert untold([turns, decided])[0].items[0].text == "Which database?"


def test_another_value_under_the_key_of_the_turns_a_line_tells_breaks_nothing() -> None:
    # A hit's metadata is a free mapping: another value under the key breaks nothing.
    turn = _item(MemorySource.TURN, "We ship on Fridays.", 0.9, turns_told="not turn ids")
    turns = NodeContent(node="turns", title="T", tier=Tier.STREAMED, items=(turn,))
    fitted = assemble([turns], budget=200, counter=EstimatingTokenCounter())
    assert fitted.text == "## T\n- We ship on Fridays."


def test_a_pair_that_does_not_fit_falls_back_to_its_question_alone() -> None:
    pair = _item(MemorySource.TURN, PAIR, 0.9, answered_by=REPLY_TEXT, line_alone="Which database?")
    turns = NodeContent(node="turns", title="T", tier=Tier.STREAMED, items=(pair,))
    counter = EstimatingTokenCounter()
    budget = counter.count("## T\n\n- Which database?\n") + 1
    assert counter.count(f"## T\n\n- {PAIR}\n") > budget
    fitted = assemble([turns], budget=budget, counter=counter)
    assert fitted.text == "## T\n- Which database?"
