"""A recalled turn that repeats its episode's summary is shown as what the summary left
out of it (``context.rest``): the pure rule, the budget's use of it, then through the
hooks on real Postgres."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from functools import partial

from memory_kernel import MemoryKernel
from memory_kernel.context.budget import SOURCE_OVERLAP, assemble
from memory_kernel.context.nodes import format_hit
from memory_kernel.context.repeats import REST
from memory_kernel.context.rest import MIN_NEW_WORDS, rest_of
from memory_kernel.context.tokens import EstimatingTokenCounter
from memory_kernel.models.context import ContextItem, MemoryHit, MemorySource, NodeContent, Tier
from memory_kernel.similarity import words
from memory_kernel.testing import FrozenClock
from tests.context.exchanges import ask_later, exchange

FIRST = (
    "We're relocating from Chicago to Austin in February for a robotics job. "
    "My wife Tanya and our daughter Ella need a house near good schools. "
    "One firm rule: no HOA, we had a nightmare one before. "
    "Budget is around $525,000 and we will talk to a lender this week."
)
SUMMARY = (
    "We're relocating from Chicago to Austin in February for a robotics job. "
    "My wife Tanya and our daughter Ella need a house near good schools. "
    "Budget is around $525,000 and we will talk to a lender this week."
)
WHEN = datetime(2024, 1, 10, tzinfo=UTC)


def _hit(source: MemorySource, text: str, score: float) -> MemoryHit:
    return MemoryHit(
        source=source, id=uuid.uuid4(), text=text, similarity=score, confidence=0.7,
        recency=1.0, score=score, created_at=WHEN, metadata={"role": "user"},
    )  # fmt: skip


def _item(source: MemorySource, text: str, score: float) -> ContextItem:
    hit = _hit(source, text, score)
    return ContextItem(text=format_hit(hit), hit=hit)


def _rest(min_words: int = MIN_NEW_WORDS) -> partial[ContextItem | None]:
    return partial(
        rest_of, query_words=["neighbourhoods", "avoid"], max_chars=400, bar=SOURCE_OVERLAP,
        render=format_hit, min_words=min_words,
    )  # fmt: skip


def test_the_rest_is_the_sentences_the_summary_does_not_carry() -> None:
    turn = _item(MemorySource.TURN, FIRST, 0.8)
    rested = _rest()(turn, words(SUMMARY))
    assert rested is not None and rested.hit is not None
    assert rested.hit.metadata[REST] == "… One firm rule: no HOA, we had a nightmare one before. …"
    assert rested.text == f"[10 January 2024] user: {rested.hit.metadata[REST]}"
    assert rested.hit.text == FIRST  # the hit keeps the whole turn (search, provenance)


def test_a_rest_that_says_nothing_new_is_none() -> None:
    turn = _item(MemorySource.TURN, f"{SUMMARY} Thanks so much!", 0.8)
    assert _rest()(turn, words(SUMMARY)) is None  # "thanks so much": three new words
    assert _rest(min_words=3)(turn, words(SUMMARY)) is not None


def _sections(*items: tuple[str, ContextItem]) -> list[NodeContent]:
    by_node: dict[str, list[ContextItem]] = {}
    for node, item in items:
        by_node.setdefault(node, []).append(item)
    return [
        NodeContent(node=n, title=n, tier=Tier.STREAMED, items=tuple(i)) for n, i in by_node.items()
    ]


def test_a_turn_repeating_its_summary_is_shown_as_its_rest() -> None:
    summary = _item(MemorySource.EPISODE, SUMMARY, 0.9)
    turn = _item(MemorySource.TURN, FIRST, 0.8)
    sections = _sections(("episodes", summary), ("turns", turn))
    counter = EstimatingTokenCounter()
    before = assemble(sections, budget=1000, counter=counter)
    assert "no HOA" not in before.text  # without the rule: dropped as the summary's repeat
    after = assemble(sections, budget=1000, counter=counter, rest=_rest())
    assert "user: … One firm rule: no HOA, we had a nightmare one before. …" in after.text
    assert after.text.count("relocating") == 1 and "lender this week" in after.text


def test_a_rest_keeps_its_turns_place_by_score() -> None:
    summary = _item(MemorySource.EPISODE, SUMMARY, 0.9)
    turn = _item(MemorySource.TURN, FIRST, 0.8)
    other = _item(MemorySource.TURN, "The lender offered a rate of 6.5% on a 30-year loan.", 0.1)
    sections = _sections(("episodes", summary), ("turns", turn), ("turns", other))
    counter = EstimatingTokenCounter()
    full = assemble(sections, budget=1000, counter=counter, rest=_rest())
    assert "no HOA" in full.text and "6.5%" in full.text
    # Room for the summary and one more line: the rest of the better-scored turn gets it.
    budget = counter.count(full.text) - 5
    fitted = assemble(sections, budget=budget, counter=counter, rest=_rest())
    assert "no HOA" in fitted.text and "6.5%" not in fitted.text


def test_a_turn_repeating_a_turn_is_not_shown_as_a_rest() -> None:
    first = _item(MemorySource.TURN, FIRST, 0.9)
    again = _item(MemorySource.TURN, FIRST + " Any tips?", 0.8)
    fitted = assemble(
        _sections(("turns", first), ("turns", again)),
        budget=1000,
        counter=EstimatingTokenCounter(),
        rest=_rest(),
    )
    assert fitted.text.count("no HOA") == 1 and fitted.duplicates == 1


# Two minutes between exchanges, as in the authored conversations.
_exchange = partial(exchange, gap=timedelta(minutes=2))


async def test_a_preference_said_in_a_long_first_message_reaches_a_later_question(
    kernel: MemoryKernel, clock: FrozenClock
) -> None:
    agent = "rest-agent"
    await _exchange(kernel, agent, FIRST, "Congratulations! Start with a Texas lender.")
    await _exchange(
        kernel, agent,
        "Tanya wants a house in Round Rock near good schools for Ella. The budget stays $525,000.",
        "Round Rock has good schools; ask the agent about the zoned school.",
    )  # fmt: skip
    await _exchange(
        kernel, agent,
        "The lender in Austin pre-approved us for $525,000 at 6.9% this week.",
        "Good, a pre-approval makes your offers stronger in Austin.",
    )  # fmt: skip
    asked = await ask_later(
        kernel,
        agent,
        "What kind of neighbourhoods should we avoid when we move to Austin?",
        after=timedelta(days=30),
    )
    assert "no HOA" in asked, asked
