"""Budgeted assembly: fit the fetched sections into a token budget (the seed's budget tiers).

Claim order (who gets tokens first):

1. ``RECENT`` — recent messages are required: they claim first; if even they exceed the
   budget, the newest messages that fit are kept (the budget is never exceeded);
2. ``TOOL`` — results the agent explicitly asked for are privileged: next claim, whole items;
3. ``STREAMED`` — recalled memories are opportunistic: whole items, best recall score
   first across all memory sections, while they fit; an item that does not fit is
   dropped whole, never cut;
4. ``SYSTEM`` — persona / host nodes fill what is left; the item that no longer fits is
   truncated at a word boundary (the seed's ``truncate(system, max_tokens=budget)``).

Display order is different: system first, then memories, tool results, and the recent
messages last (closest to the user's message). Section headers cost tokens too. Costs are
the counter's count of each rendered line; a final check on the whole text drops the last
opportunistic item while the real count is over (tokenizers need not be additive), so
``count(text) <= budget`` always holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from memory_kernel.models.context import ContextItem, MemoryHit, NodeContent, Tier
from memory_kernel.protocols import TokenCounter

__all__ = ["Assembly", "assemble", "render"]

_CLAIM_ORDER = (Tier.RECENT, Tier.TOOL, Tier.STREAMED, Tier.SYSTEM)
_DISPLAY_ORDER = (Tier.SYSTEM, Tier.STREAMED, Tier.TOOL, Tier.RECENT)


@dataclass(slots=True)
class Assembly:
    text: str
    sections: list[NodeContent]
    hits: list[MemoryHit]
    tokens_used: int
    items_dropped: int
    tokens_by_tier: dict[str, int] = field(default_factory=dict)
    tokens_by_node: dict[str, int] = field(default_factory=dict)


def _header(section: NodeContent) -> str:
    return f"## {section.title}"


def _line(item: ContextItem) -> str:
    return f"- {item.text}"


def render(sections: Sequence[NodeContent]) -> str:
    """``## Title`` then one ``- item`` line per item; sections separated by a blank line."""
    blocks = []
    for section in sections:
        if section.items:
            blocks.append("\n".join([_header(section), *(_line(i) for i in section.items)]))
    return "\n\n".join(blocks)


def _truncate(text: str, max_tokens: int, counter: TokenCounter) -> str:
    """The longest word-prefix of ``text`` that costs at most ``max_tokens`` (binary search)."""
    parts = text.split(" ")
    lo, hi = 0, len(parts)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if counter.count(" ".join(parts[:mid])) <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    return " ".join(parts[:lo])


class _Packer:
    def __init__(self, budget: int, counter: TokenCounter) -> None:
        self.left = budget
        self.counter = counter
        self.kept: dict[str, list[ContextItem]] = {}
        self.cost: dict[str, int] = {}
        self.dropped = 0
        self.order: list[tuple[str, ContextItem]] = []  # opportunistic items, in claim order

    def header_cost(self, section: NodeContent) -> int:
        if section.node in self.kept:
            return 0
        # "\n\n" between sections: one separator per section is a safe over-estimate.
        return self.counter.count(_header(section) + "\n\n")

    def take(self, section: NodeContent, item: ContextItem, *, droppable: bool) -> bool:
        cost = self.counter.count(_line(item) + "\n") + self.header_cost(section)
        if cost > self.left:
            return False
        self.left -= cost
        self.kept.setdefault(section.node, []).append(item)
        self.cost[section.node] = self.cost.get(section.node, 0) + cost
        if droppable:
            self.order.append((section.node, item))
        return True


def assemble(sections: Sequence[NodeContent], *, budget: int, counter: TokenCounter) -> Assembly:
    """Fit ``sections`` (each in its tier, items best first) into ``budget`` tokens."""
    packer = _Packer(max(0, budget), counter)
    by_tier = {tier: [s for s in sections if s.tier is tier] for tier in _CLAIM_ORDER}
    for section in by_tier[Tier.RECENT]:
        _take_newest(packer, section)
    for section in by_tier[Tier.TOOL]:
        for item in section.items:
            if not packer.take(section, item, droppable=False):
                packer.dropped += 1
    for section, item in _by_score(by_tier[Tier.STREAMED]):
        if not packer.take(section, item, droppable=True):
            packer.dropped += 1
    for section in by_tier[Tier.SYSTEM]:
        _fill(packer, section)
    return _finish(packer, sections, budget, counter)


def _by_score(sections: Sequence[NodeContent]) -> list[tuple[NodeContent, ContextItem]]:
    """Streamed items of every section, best recall score first (facts and episodes compete
    for the same tokens); items without a score (gists) keep their order after them."""
    pairs = [(s, i) for s in sections for i in s.items]
    return sorted(pairs, key=lambda p: -p[1].hit.score if p[1].hit is not None else 1.0)


def _take_newest(packer: _Packer, section: NodeContent) -> None:
    """Recent messages: the newest that fit, kept in chronological order."""
    fitted: list[ContextItem] = []
    for item in reversed(section.items):
        if packer.take(section, item, droppable=False):
            fitted.append(item)
        else:
            packer.dropped += 1
    if fitted:
        packer.kept[section.node] = fitted[::-1]


def _fill(packer: _Packer, section: NodeContent) -> None:
    for item in section.items:
        if packer.take(section, item, droppable=False):
            continue
        room = packer.left - packer.header_cost(section) - packer.counter.count("- \n")
        cut = _truncate(item.text, room, packer.counter) if room > 0 else ""
        # A truncated item still counts as kept; one that cannot fit even cut is dropped.
        if not (
            cut and packer.take(section, item.model_copy(update={"text": cut}), droppable=False)
        ):
            packer.dropped += 1


def _finish(
    packer: _Packer, sections: Sequence[NodeContent], budget: int, counter: TokenCounter
) -> Assembly:
    kept = _kept_sections(packer, sections)
    text = render(kept)
    while counter.count(text) > budget:
        if packer.order:
            node, item = packer.order.pop()
            packer.kept[node].remove(item)
        else:  # only required items left (a non-additive tokenizer): drop from the front
            node = next(n for n, items in packer.kept.items() if items)
            packer.kept[node].pop(0)
        packer.dropped += 1
        kept = _kept_sections(packer, sections)
        text = render(kept)
    hits = [i.hit for s in kept if s.tier is Tier.STREAMED for i in s.items if i.hit is not None]
    by_tier: dict[str, int] = {}
    for s in kept:
        by_tier[s.tier.value] = by_tier.get(s.tier.value, 0) + packer.cost.get(s.node, 0)
    return Assembly(
        text=text,
        sections=kept,
        hits=hits,
        tokens_used=counter.count(text),
        items_dropped=packer.dropped,
        tokens_by_tier=by_tier,
        tokens_by_node={s.node: packer.cost.get(s.node, 0) for s in kept},
    )


def _kept_sections(packer: _Packer, sections: Sequence[NodeContent]) -> list[NodeContent]:
    out = []
    for tier in _DISPLAY_ORDER:
        for s in sections:
            items = packer.kept.get(s.node)
            if s.tier is tier and items:
                out.append(s.model_copy(update={"items": tuple(items)}))
    return out
