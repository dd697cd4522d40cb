"""The shipped synonym table (WordNet's common senses): another word for the same thing
aligns in place, and opposites, relatives and other values never do."""

from __future__ import annotations

import pytest

from memory_kernel.config import HeartConfig
from memory_kernel.heart.facts.frames import compare
from memory_kernel.heart.facts.normalise import features
from memory_kernel.heart.facts.relation import PairRelation, RelationThresholds, classify_pair
from memory_kernel.heart.facts.slots import statement
from memory_kernel.heart.facts.synonyms import lemmas, synonymous

T = RelationThresholds.from_config(HeartConfig())


def test_inflected_and_irregular_forms_find_their_base() -> None:
    assert "buy" in lemmas("bought")
    assert "purchase" in lemmas("purchasing")
    assert lemmas("xqzzy") == frozenset()


@pytest.mark.parametrize(("a", "b"), [("bought", "purchased"), ("often", "frequently")])
def test_common_senses_are_synonyms(a: str, b: str) -> None:
    assert synonymous(a, b) and synonymous(b, a)


@pytest.mark.parametrize(
    ("a", "b"),
    [("buy", "sell"), ("sister", "brother"), ("green", "blue"), ("early", "late"),
     ("morning", "evening"), ("same", "same")],
)  # fmt: skip
def test_opposites_relatives_and_the_word_itself_are_not(a: str, b: str) -> None:
    assert not synonymous(a, b)


def test_a_synonym_swapped_in_place_is_a_restatement() -> None:
    old, new = "Noor purchased two tickets for the ferry.", "Noor bought two tickets for the ferry."
    assert compare(statement(old), statement(new)).same
    assert classify_pair(features(old), features(new), 0.6, T).relation is PairRelation.DUPLICATE


def test_another_value_swapped_in_place_is_still_apart() -> None:
    old, new = "Noor sold two tickets for the ferry.", "Noor bought two tickets for the ferry."
    assert not compare(statement(old), statement(new)).same
    assert classify_pair(features(old), features(new), 0.6, T).relation is not (
        PairRelation.DUPLICATE
    )
