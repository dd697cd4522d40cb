"""The shared word-overlap measure (pure functions, no database)."""

from __future__ import annotations

import pytest

from memory_kernel.similarity import text_overlap, word_overlap, words


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
