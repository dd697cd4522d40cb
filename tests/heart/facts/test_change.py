"""A change is announced by a construction (a verb of changing a value with its target, an
adverb of the present against the past, arriving at a level, a habit up to now, the old
value given up), not by a word that merely co-occurs with changes."""

from __future__ import annotations

import pytest

from memory_kernel.heart.facts.change import announces_change, announces_change_from, corrects
from memory_kernel.heart.facts.query_slot import query_view
from memory_kernel.heart.facts.read_resolution import QueryContext, read_features
from memory_kernel.heart.facts.slots import statement


@pytest.mark.parametrize(
    "text",
    [
        "We migrated the billing jobs over to Temporal.",  # verb of change + target
        "The landlord is raising the rent from $1,200.",  # verb of change + source
        "Standup got pushed back to 10:30.",
        "The Tuesday class is on Thursdays now.",  # the present against the past
        "I don't eat meat anymore.",
        "She no longer manages the design team.",
        "We've been hiking a lot lately.",
        "We're down to three open incidents.",  # a level moving
        "That makes it my fifth marathon.",
        "The podcast passed 10,000 listeners.",  # arriving at a level
        "I've been using Obsidian for notes.",  # a habit up to now
        "We ditched Jira for good.",  # the old value given up
        "The vet clinic has a new address on Quay Street.",  # a new one acquired
        "Marta got a new manager last week.",
        "New billing contact: accounts@harbourlane.io",  # a heading
    ],
)
def test_a_change_construction_is_announced(text: str) -> None:
    assert announces_change(text)


@pytest.mark.parametrize(
    "text",
    [
        "The new laptop has a 1 TB SSD.",  # "new" names a thing, no change
        "The job retries up to 3 times.",  # a cap, not a level moving
        "Ava goes to Lincoln Elementary.",  # going somewhere is not changing a value
        "The events topic keeps 7 days of data.",  # "topic" is no "topped"
        "My passport expires on 14 February 2027.",  # "passport" is no "passed"
        "Since 2019 the office has been in Leeds.",  # "since" alone: a duration
        "I finally read Piranesi.",  # "finally" alone: a completion
    ],
)
def test_a_word_that_merely_co_occurs_with_changes_is_not_one(text: str) -> None:
    assert not announces_change(text)


def test_the_read_scorer_sees_the_announcement_not_the_loose_change_words() -> None:
    # The slot view's bag of change words fires on "new" here; the read feature does not.
    old, new = (
        statement("The old laptop has 16 GB of RAM."),
        statement("The new laptop has 32 GB of RAM."),
    )
    assert new.change
    ctx = QueryContext(query_view("how much RAM does the laptop have"), {})
    assert read_features(old, new, 0.5, ctx)["announced_new"] == 0.0
    moved = statement("The laptop got bumped up to 32 GB of RAM.")
    assert read_features(old, moved, 0.5, ctx)["announced_new"] == 1.0


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("The piano tuner is called Stefan.", "sorry, the piano tuner is Stefanie, not Stefan"),
        ("Book club meets on Wednesdays.", "Book club is Thursdays — not Wednesdays."),
        ("The cat is named Olive.", "the cat's name is Clove; not Olive, I misspelled it"),
        ("Choir practice is on Mondays.", "choir is Wednesdays not Mondays, my mistake"),
    ],
)
def test_a_correction_denies_what_the_older_statement_said(old: str, new: str) -> None:
    assert corrects(old, new) and announces_change_from(old, new)
    assert not announces_change(new)  # the construction needs the older statement


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # The denied word is not one the older statement states.
        ("The piano tuner is called Stefan.", "The piano tuner is Stefan, not his brother."),
        # A plain negation, not a contrast with what is put instead.
        ("Book club meets on Wednesdays.", "Book club does not meet on Wednesdays in August."),
        ("Choir practice is on Mondays.", "Choir practice is not on Mondays in summer."),
        ("Choir practice is on Mondays.", "Choir practice isn't Mondays in summer."),
        # "not to": a function word, no value of the older statement denied.
        ("The choir meets to practise.", "We decided not to practise this week."),
    ],
)
def test_a_denial_of_nothing_the_older_said_is_no_correction(old: str, new: str) -> None:
    assert not corrects(old, new)
