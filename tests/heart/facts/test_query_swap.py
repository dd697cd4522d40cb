"""The read-time rule for look-alikes written in parallel: the newer fact puts another word
in place of the word the query asks about (examples written for this test)."""

from __future__ import annotations

import pytest

from memory_kernel.config import HeartConfig
from memory_kernel.heart.facts.normalise import features
from memory_kernel.heart.facts.query_slot import query_view
from memory_kernel.heart.facts.query_swap import other_time, swapped_in
from memory_kernel.heart.facts.read_resolution import read_ruled
from memory_kernel.heart.facts.relation import RelationThresholds
from memory_kernel.heart.facts.slots import statement


@pytest.mark.parametrize(
    ("query", "old", "new"),
    [
        ("how much storage does the tablet have",
         "The tablet has 64 GB of storage.", "The tablet has a 2 GHz processor."),
        ("what is my gym membership", "My gym membership is $45 a month.",
         "My streaming subscription is $12 a month."),
        ("what price range for the armchair",
         "We're pricing an armchair in the $400-$700 range.",
         "We're pricing a lamp in the $40-$90 range."),
        # The thing asked about replaced by another thing.
        ("how much storage does the tablet have", "The tablet has 64 GB of storage.",
         "The phone has 64 GB of storage."),
    ],
)  # fmt: skip
def test_the_asked_word_swapped_for_another_is_another_thing(
    query: str, old: str, new: str
) -> None:
    view = query_view(query)
    assert swapped_in(view, statement(old), statement(new))
    t = RelationThresholds.from_config(HeartConfig())
    assert read_ruled(view, features(old), features(new), t) == 0.0


@pytest.mark.parametrize(
    ("query", "old", "new"),
    [
        # An update told with its reason is no parallel sentence.
        ("how much storage does the tablet have", "The tablet has 64 GB of storage.",
         "I swapped the tablet for the bigger model, so storage is 256 GB now."),
        # Parallel, but the word swapped is not one asked about: the scorer decides.
        ("what does the tablet cost", "The tablet costs $300 at Target.",
         "The tablet costs $280 at Costco."),
        # The asked word is kept: a new value of the same slot.
        ("what is my gym membership", "My gym membership is $45 a month.",
         "My gym membership is $52 a month."),
        # The asked words left out beside a time word: said shorter, not another thing.
        ("how many miles do I run", "I run 12 easy miles.", "Ran 15 easy today."),
        ("how many chin-ups can I do", "I can do 6 full chin-ups.", "Did 9 full this morning."),
    ],
)  # fmt: skip
def test_no_swap_when_not_parallel_or_the_asked_word_stays(query: str, old: str, new: str) -> None:
    assert not swapped_in(query_view(query), statement(old), statement(new))


def test_a_query_without_content_words_swaps_nothing() -> None:
    old, new = statement("The tablet has 64 GB of storage."), statement("The tablet has 2 GHz.")
    assert not swapped_in(query_view("what is it"), old, new)


def test_a_query_pinned_to_a_period_is_not_answered_by_another_period() -> None:
    query = query_view("how much was the water bill in March")
    old = statement("The water bill for March was $61.")
    april = "April's water bill came to $74."
    assert other_time(query, old, statement(april))
    t = RelationThresholds.from_config(HeartConfig())
    assert read_ruled(query, features(old.text), features(april), t) == 0.0
    # The same period named again, or no period at all: the scorer decides.
    assert not other_time(query, old, statement("Correction: March's water bill was $66."))
    assert not other_time(query, old, statement("The water bill is $66 now."))
    assert not other_time(query_view("how much is the water bill"), old,
                          statement("April's water bill came to $74."))  # fmt: skip


@pytest.mark.parametrize(
    ("query", "old", "new"),
    [
        ("what day is my violin lesson", "Violin lessons are on Wednesdays.",
         "My violin teacher had to switch me to Fridays."),
        ("when is Mara's viva", "Mara's viva is on June 4.",
         "Mara's examiners moved it to June 18."),
    ],
)  # fmt: skip
def test_who_made_a_change_is_no_other_thing(query: str, old: str, new: str) -> None:
    """The newer fact words the asked slot otherwise ("lessons" -> "teacher") because it
    tells who changed it: the rule leaves the pair to the scorer instead of ruling it
    apart. What a verb of changing changes is still another thing."""
    view = query_view(query)
    assert swapped_in(view, statement(old), statement(new))
    t = RelationThresholds.from_config(HeartConfig())
    assert read_ruled(view, features(old), features(new), t) != 0.0
    other = new.replace("My violin teacher had to switch me", "Switched the cello lessons")
    other = other.replace("Mara's examiners moved it", "Moved Rui's viva")
    assert other != new
    assert read_ruled(view, features(old), features(other), t) == 0.0
