"""What the speaker wants: the rule extractor marks preferences, norms and standing
instructions with the category the context's ``user_traits`` node reads."""

from __future__ import annotations

from datetime import timedelta

import pytest

from memory_kernel import MemoryKernel
from memory_kernel.heart.extraction.rules import RuleExtractor, extract_text
from memory_kernel.models.facts import PREFERENCE
from memory_kernel.models.turns import TurnInput, TurnOutcome
from memory_kernel.testing import FakeEmbedder, FrozenClock

from .conftest import queue_config


def _by_content(text: str, role: str = "user") -> dict[str, str | None]:
    return {f.content: f.category for f in extract_text(text, role)}


@pytest.mark.parametrize(
    ("said", "kept"),
    [
        ("I prefer aisle seats on long flights.", "The user prefers aisle seats on long flights."),
        ("We love walking tours.", "We love walking tours."),
        ("I really don't want to drive.", "The user really doesn't want to drive."),
        ("My wife hates cilantro.", "The user's wife hates cilantro."),
        ("The garage is non-negotiable.", "The garage is non-negotiable."),
        ("I've been loving the Hoka Clifton.", "The user has been loving the Hoka Clifton."),
        ("A quiet street is a must.", "A quiet street is a must."),
    ],
)
def test_wanting_liking_avoiding_and_norms_are_preferences(said: str, kept: str) -> None:
    assert _by_content(said) == {kept: PREFERENCE}


@pytest.mark.parametrize(
    ("said", "kept"),
    [
        ("One firm rule: no HOA. We had a bad one.", "The user's rule: no HOA."),
        ("Dealbreakers: carpet in bathrooms", "The user's dealbreakers: carpet in bathrooms."),
    ],
)
def test_a_label_naming_a_norm_keeps_what_it_rules(said: str, kept: str) -> None:
    assert _by_content(said)[kept] == PREFERENCE


def test_a_transcript_speakers_wants_are_plain_facts() -> None:
    # A named speaker is not the user the profile is about (LoCoMo's two friends).
    assert _by_content("Caroline: My priority: quiet mornings") == {
        "Caroline's priority: quiet mornings.": None
    }
    assert _by_content("Melanie: I love camping with my kids.") == {
        "Melanie loves camping with their kids.": None
    }


def test_a_label_that_names_no_norm_is_still_only_a_preamble() -> None:
    # "Big thing for me:" names no norm: the clause after it is judged on its own.
    facts = _by_content("Big thing for me: I want to use positive reinforcement only.")
    assert facts == {"The user wants to use positive reinforcement only.": PREFERENCE}
    assert _by_content("Random update: Noor moved to Leeds.") == {"Noor moved to Leeds.": None}


@pytest.mark.parametrize(
    ("said", "kept"),
    [
        (
            "Please keep code examples in TypeScript, that's what the team uses.",
            "The user's standing instruction: "
            '"Please keep code examples in TypeScript, that\'s what the team uses."',
        ),
        (
            "Please give me runnable SQL in answers, not pseudo-code.",
            "The user's standing instruction: \"Please give me runnable SQL in answers, not "
            'pseudo-code."',
        ),
        (
            "Please give me answers as bullet points.",
            'The user\'s standing instruction: "Please give me answers as bullet points."',
        ),
        (
            "Please always use metric units from now on.",
            'The user\'s standing instruction: "Please always use metric units from now on."',
        ),
    ],
)
def test_a_request_that_holds_beyond_this_answer_is_a_standing_instruction(
    said: str, kept: str
) -> None:
    assert _by_content(said) == {kept: PREFERENCE}


@pytest.mark.parametrize(
    "said",
    [
        "Please give me a recipe for banana bread.",  # one answer only
        "Please give me the answers to questions 3 and 4.",  # those answers, not all
        "Keep it up!",  # encouragement, between friends
        "Keep me posted on the move.",
        "Keep going and never give up!",
        "Can you always use metric units?",  # a question
    ],
)
def test_one_off_requests_and_encouragement_give_no_fact(said: str) -> None:
    assert _by_content(said) == {}


@pytest.mark.parametrize(
    "said",
    [
        "I moved to Denver in March.",
        "We have 38 Airflow DAGs.",
        "Our dbt project is owned by Kenji.",
        "The user's wife likes",  # no finite clause: nothing at all
        "I think the garage is fine.",
    ],
)
def test_statements_that_want_nothing_carry_no_category(said: str) -> None:
    assert PREFERENCE not in _by_content(said).values()


def test_a_coordinated_clause_with_its_own_subject_is_judged_alone() -> None:
    # ", and we'd love …" is hypothetical and dropped; the norm before it stays.
    facts = _by_content("A home office is non-negotiable, and we'd love a big yard.")
    assert facts == {"A home office is non-negotiable.": PREFERENCE}


async def test_a_rule_said_once_is_in_every_later_context_and_does_not_fade(
    pg_dsn: str, drop_schema: str, clock: FrozenClock
) -> None:
    """End to end through the hooks: the rule extractor learns the rule with its category,
    months of nightly decay leave it current, and a question sharing none of its words gets
    it in ``user_traits``; a fact said beside it, of no steady category, has faded."""
    agent = "agent-pref"
    async with MemoryKernel.open(
        pg_dsn, config=queue_config(drop_schema), clock=clock, embedder=FakeEmbedder(),
        extractor=RuleExtractor(),
    ) as kernel:  # fmt: skip
        said = "We're moving to Austin. One firm rule: no HOA. Our budget is about $525,000."
        ctx = await kernel.pre_turn(TurnInput(agent_id=agent, session_id="s1", message=said))
        await kernel.post_turn(ctx.turn, TurnOutcome(response_text="Noted."))
        await kernel.extract_pending(agent)
        learned = {f.content for f in await kernel.heart.facts.as_of(agent, clock.now())}
        assert "Our budget is about $525,000." in learned
        for _ in range(4):  # four months of monthly maintenance
            clock.advance(timedelta(days=30))
            await kernel.consolidate(agent)
        facts = await kernel.heart.facts.as_of(agent, clock.now())
        current = {f.content: f for f in facts if f.is_current}
        rule = current["The user's rule: no HOA."]
        assert rule.category == PREFERENCE and rule.confidence == 0.7
        assert "Our budget is about $525,000." not in current  # faded, deprecated
        ask = TurnInput(agent_id=agent, session_id="s2", message="Which neighbourhoods fit us?")
        text = (await kernel.pre_turn(ask)).text
        section = text.split("## What the user wants\n", 1)[1].split("\n\n", 1)[0]
        assert section.splitlines() == ["- [1 January 2026] The user's rule: no HOA."]
