"""A newer statement whose amounts reconcile with the older one's (the older amount changed
by one amount of the newer is another) gives that slot a new value, at read time, where the
query ties both; never at write time (examples written for this test)."""

from __future__ import annotations

import pytest

from memory_kernel.config import HeartConfig
from memory_kernel.heart.facts.arithmetic import reconciles
from memory_kernel.heart.facts.normalise import features
from memory_kernel.heart.facts.query_slot import query_view
from memory_kernel.heart.facts.read_resolution import read_ruled
from memory_kernel.heart.facts.relation import PairRelation, RelationThresholds, classify_pair
from memory_kernel.heart.facts.slots import statement

T = RelationThresholds.from_config(HeartConfig())


@pytest.mark.parametrize(
    ("old", "new", "query"),
    [
        ("We keep 5 kayaks at the cabin.", "Sold two of the kayaks, 3 left",
         "how many kayaks are at the cabin"),
        ("The data team has 8 engineers.", "Two joined this week so we're at 10",
         "how many engineers does the data team have"),
        ("The roof fund stands at $4,000.", "Put in another $500, it's $4,500 now.",
         "how much is in the roof fund"),
        ("Her course is 8 weeks long.",
         "The physio added 2 more weeks to her course, 10 weeks in all.", "how long is her course"),
    ],
)  # fmt: skip
def test_a_change_and_its_result_reconcile_with_the_older_amount(
    old: str, new: str, query: str
) -> None:
    assert reconciles(statement(old), statement(new))
    assert read_ruled(query_view(query), features(old), features(new), T) == 1.0
    # In a store, amounts of unrelated facts add up by chance: nothing retires on a sum.
    verdict = classify_pair(features(old), features(new), 0.5, T)
    assert verdict.relation is not PairRelation.UPDATE


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # Amounts that do not add up to one another.
        ("The data team has 8 engineers.", "The design team has 5 designers and 2 researchers."),
        # The ends of ranges add up by construction: a price list, not a change.
        ("Parking is $4 for up to 3 hours.", "Parking is $7 for 3 to 4 hours."),
        # The older amount given again: nothing changed.
        ("The data team has 8 engineers.", "Still 8 engineers: 2 left and 2 joined."),
        # Calendar values are no amounts.
        ("The sale starts March 10.", "The fair runs 7 days from March 17."),
    ],
)  # fmt: skip
def test_amounts_that_do_not_reconcile_are_no_change(old: str, new: str) -> None:
    assert not reconciles(statement(old), statement(new))
