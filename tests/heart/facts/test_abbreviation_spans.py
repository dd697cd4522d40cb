"""An abbreviation aligns with the words it stands for wherever the other side puts them
(``frames.collapsed``): a restatement that moves or abbreviates a multi-word name is the
same statement, and a span that only partly matches changes nothing."""

from __future__ import annotations

import pytest

from memory_kernel.config import HeartConfig
from memory_kernel.heart.facts.frames import collapsed, compare
from memory_kernel.heart.facts.normalise import features
from memory_kernel.heart.facts.relation import PairRelation, RelationThresholds, classify_pair
from memory_kernel.heart.facts.slots import statement

T = RelationThresholds.from_config(HeartConfig())


def _relation(old: str, new: str, cosine: float = 0.6) -> PairRelation:
    return classify_pair(features(old), features(new), cosine, T).relation


def test_a_written_out_name_collapses_into_the_other_sides_initials() -> None:
    long_, short = (
        statement("Our CTO studied at the Royal College of Art."),
        statement("Our CTO studied at the RCA."),
    )
    items = collapsed(list(long_.items), list(short.items))
    assert [i[1] for i in items][-1] == "rca"
    assert len(items) == len(long_.items) - 2  # "Royal College Art" became one item
    # Nothing to collapse without an abbreviation on the other side.
    assert collapsed(list(short.items), list(long_.items)) == list(short.items)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # The initials moved to another place in the sentence.
        ("Sam is taking a Bachelor of Fine Arts evening course.",
         "Sam is taking an evening course BFA."),
        # Written out with a verb dropped beside it ("works in" / "is in").
        ("Ravi works in the Los Angeles warehouse.", "Ravi is in the LA warehouse."),
    ],
)  # fmt: skip
def test_an_abbreviation_anywhere_restates_the_written_out_name(old: str, new: str) -> None:
    assert compare(statement(old), statement(new)).same
    assert _relation(old, new) is PairRelation.DUPLICATE


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # The initials fit another name: another office, never the same.
        ("Ravi works in the Los Angeles warehouse.", "Ravi works in the NY warehouse."),
        # Initials of only part of the name, and a changed value beside them.
        ("The Royal College of Art show opens on 4 May.", "The RC show opens on 9 May."),
    ],
)  # fmt: skip
def test_initials_that_do_not_stand_for_the_span_merge_nothing(old: str, new: str) -> None:
    assert not compare(statement(old), statement(new)).same
    assert _relation(old, new) is not PairRelation.DUPLICATE
