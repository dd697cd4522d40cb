"""``context.traits.within_share`` (pure): a profile section cut to its share of the budget."""

from __future__ import annotations

from memory_kernel.context.tokens import EstimatingTokenCounter
from memory_kernel.context.traits import within_share
from memory_kernel.models.context import ContextItem, NodeContent, Tier

COUNTER = EstimatingTokenCounter()


def _section(tier: Tier, *texts: str) -> NodeContent:
    items = tuple(ContextItem(text=t) for t in texts)
    return NodeContent(node="n", title="T", tier=tier, items=items)


def test_lines_are_kept_in_order_while_they_fit_the_share() -> None:
    line = "The user prefers aisle seats."  # 8 tokens as a line
    section = _section(Tier.PROFILE, line, line + " 2", line + " 3")
    assert [
        i.text for i in within_share(section, budget=170, share=0.1, counter=COUNTER).items
    ] == [
        line,
        line + " 2",
    ]


def test_the_first_line_is_kept_whatever_the_share() -> None:
    section = _section(Tier.PROFILE, "The user wants every answer in metric units, always.")
    assert len(within_share(section, budget=10, share=0.1, counter=COUNTER).items) == 1


def test_other_tiers_are_left_as_they_are() -> None:
    section = _section(Tier.STREAMED, *(f"memory {n}" for n in range(30)))
    assert within_share(section, budget=10, share=0.1, counter=COUNTER) == section
