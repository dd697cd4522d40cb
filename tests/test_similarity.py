"""The shared word-overlap measure (pure functions, no database)."""

from __future__ import annotations

import pytest

from memory_kernel.similarity import other_numbers, text_overlap, word_overlap, words


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("Show me your current status", "show me your CURRENT status!", 1.0),
        ("deploy the api", "deploy the api to staging now", 1.0),  # over the smaller set
        ("deploy the api today", "deploy a web app", 0.25),
        ("", "anything", 0.0),
        ("...", "anything", 0.0),  # no words at all
    ],
)
def test_overlap_is_shared_words_over_the_smaller_set(a: str, b: str, expected: float) -> None:
    assert text_overlap(a, b) == pytest.approx(expected)
    # The pre-tokenised form gives the same figure, either way round.
    assert word_overlap(words(a), words(b)) == pytest.approx(expected)
    assert word_overlap(words(b), words(a)) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("a", "b", "other"),
    [
        ("migrate shard 12", "migrate shard 13", True),
        ("Set replicas to 4", "set the replicas to 8 now", True),
        ("Budget is 1,500 a month", "Budget is 1,500 per month", False),  # the same number
        ("deploy the fix", "deploy fix 2", False),  # one side names none: said loosely
        ("release 2.1 on Friday", "release 2.10 on Friday", True),
        ("no numbers here", "none here either", False),
    ],
)
def test_other_numbers_are_other_things(a: str, b: str, other: bool) -> None:
    assert other_numbers(a, b) is other
    assert other_numbers(b, a) is other
