"""Budgeted assembly: fit the fetched sections into a token budget (the seed's budget tiers).

Claim order (who gets tokens first):

1. ``RECENT`` — recent messages are required: they claim first; if even they exceed the
   budget, the newest messages that fit are kept (the budget is never exceeded);
2. ``TOOL`` — results the agent explicitly asked for are privileged: next claim, whole items;
3. ``PROFILE`` then ``STREAMED`` — what the user wants (a few lines for every answer),
   then recalled memories, are opportunistic: whole items, the profile's in their order,
   then best recall score first across all memory sections, while they fit; an item that
   does not fit is dropped whole, never cut; an item that repeats a kept one nearly word
   for word (the same memory as a fact and as an episode, a decision and the reply it was
   drafted from; ``context.repeats``) is left out and costs nothing — but a turn that
   repeats only summaries is shown as what they left out of it (``context.rest``);
4. ``SYSTEM`` — persona / host nodes fill what is left; the item that no longer fits is
   truncated at a word boundary (the seed's ``truncate(system, max_tokens=budget)``).

Display order is different: system first, then the profile, memories, tool results, and
the recent messages last (closest to the user's message). Within a section, what happened
(turns, episodes) is shown oldest first, each line with its own date (``context.dated``: a
date on a line of its own governed every item under it, however far down). Section headers
cost tokens too, charged to the item that opens them. Costs are the counter's count of each
rendered line; a final check on the whole text drops the last opportunistic item while the
real count is over (tokenizers need not be additive), so ``count(text) <= budget`` holds.
The reported ``tokens_used`` is ``count(text)`` and ``tokens_by_node`` splits exactly that
among the sections (each one's marginal cost in the final text, separators included), so
the parts always sum to the whole.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from memory_kernel.context.repeats import Kept, Rest, kind, made_from_turns, read, repeats
from memory_kernel.context.tokens import truncate
from memory_kernel.models.context import ContextItem, MemoryHit, MemorySource, NodeContent, Tier
from memory_kernel.protocols import TokenCounter
from memory_kernel.similarity import word_overlap, words

__all__ = [
    "ALONE", "DUPLICATE_OVERLAP", "SOURCE_OVERLAP", "TOLD", "Assembly", "assemble", "line",
    "render",
]  # fmt: skip

#: Streamed items sharing more than this share of words are one memory told twice: only
#: near-verbatim repeats pass 0.8 (a paraphrase shares far fewer words).
DUPLICATE_OVERLAP = 0.8
#: A turn is the raw source of the distilled memories (a decision drafted from a reply, a
#: fact taken from a message): once such a memory is kept, a turn saying as much as the
#: seed's "same decision" measure (over 0.7 of the words) only repeats it in other words.
SOURCE_OVERLAP = 0.7
_CLAIM_ORDER = (Tier.RECENT, Tier.TOOL, Tier.PROFILE, Tier.STREAMED, Tier.SYSTEM)
_DISPLAY_ORDER = (Tier.SYSTEM, Tier.PROFILE, Tier.STREAMED, Tier.TOOL, Tier.RECENT)
_HAPPENED = frozenset({MemorySource.EPISODE, MemorySource.TURN})
ALONE = "line_alone"  # a hit's metadata: the shorter line its item falls back to
TOLD = "turns_told"  # a turn hit's metadata: ids of the turns its line shows after it


@dataclass(slots=True)
class Assembly:
    text: str
    sections: list[NodeContent]
    hits: list[MemoryHit]
    tokens_used: int
    items_dropped: int
    duplicates: int = 0  # streamed items left out as near-duplicates of kept ones
    tokens_by_tier: dict[str, int] = field(default_factory=dict)
    tokens_by_node: dict[str, int] = field(default_factory=dict)


def _header(section: NodeContent) -> str:
    return f"## {section.title}"


def line(item: ContextItem) -> str:
    return f"- {item.text}"


def _dated(item: ContextItem) -> bool:
    """Whether ``item`` is something that happened (an episode, a turn): shown in time order."""
    return item.hit is not None and item.hit.source in _HAPPENED


def _display(items: Sequence[ContextItem]) -> list[ContextItem]:
    """Dated items oldest first (stable: same-time items keep their order), then the
    undated ones in their given (best-first) order."""
    dated = [i for i in items if _dated(i)]
    if not dated:
        return list(items)
    dated.sort(key=_when)
    return dated + [i for i in items if not _dated(i)]


def _when(item: ContextItem) -> datetime:
    assert item.hit is not None  # only dated items are sorted
    return item.hit.created_at


def _lines(section: NodeContent) -> list[str]:
    return [_header(section), *(line(item) for item in _display(section.items))]


def render(sections: Sequence[NodeContent]) -> str:
    """``## Title`` then one ``- item`` line per item; sections separated by a blank line."""
    return "\n\n".join("\n".join(_lines(s)) for s in sections if s.items)


class _Packer:
    def __init__(self, budget: int, counter: TokenCounter) -> None:
        self.left = budget
        self.counter = counter
        self.kept: dict[str, list[ContextItem]] = {}
        self.cost: dict[str, int] = {}
        self.item_cost: dict[int, int] = {}  # id(item) -> what its line cost (refunds)
        self.dropped = 0
        self.order: list[tuple[str, ContextItem]] = []  # opportunistic items, in claim order
        self.duplicates = 0

    def header_cost(self, section: NodeContent) -> int:
        if section.node in self.kept:
            return 0
        # "\n\n" between sections: one separator per section is a safe over-estimate.
        return self.counter.count(_header(section) + "\n\n")

    def take(self, section: NodeContent, item: ContextItem, *, droppable: bool) -> bool:
        cost = self.counter.count(line(item) + "\n") + self.header_cost(section)
        if cost > self.left:
            return False
        self.left -= cost
        self.kept.setdefault(section.node, []).append(item)
        self.cost[section.node] = self.cost.get(section.node, 0) + cost
        self.item_cost[id(item)] = cost
        if droppable:
            self.order.append((section.node, item))
        return True

    def give_back(self, node: str, item: ContextItem) -> None:
        """Remove a kept opportunistic item and refund its line (its section's header, if
        it opened one, stays paid: an over-estimate the final count corrects)."""
        self.kept[node].remove(item)
        self.order.remove((node, item))
        cost = self.item_cost.pop(id(item))
        self.left += cost
        self.cost[node] -= cost


def assemble(
    sections: Sequence[NodeContent],
    *,
    budget: int,
    counter: TokenCounter,
    duplicate_overlap: float = DUPLICATE_OVERLAP,
    source_overlap: float = SOURCE_OVERLAP,
    rest: Rest | None = None,
) -> Assembly:
    """Fit ``sections`` (each in its tier, items best first) into ``budget`` tokens.

    A streamed item whose words overlap an already kept streamed item's by more than
    ``duplicate_overlap`` (shared words over the smaller set) is left out: recall's
    diversity sampling works per node and on vectors; this also catches the same memory
    told by two nodes (a fact and the episode it came from) and verbatim repeats that a
    weak embedder scatters. Between a turn and a distilled memory (either way round) the
    bar is ``source_overlap``: the turn is where the memory came from. Decisions with
    different outcomes are never repeats."""
    packer = _Packer(max(0, budget), counter)
    by_tier = {tier: [s for s in sections if s.tier is tier] for tier in _CLAIM_ORDER}
    for section in by_tier[Tier.RECENT]:
        _take_newest(packer, section)
    for section in by_tier[Tier.TOOL]:
        for item in section.items:
            if not packer.take(section, item, droppable=False):
                packer.dropped += 1
    opportunistic = [*by_tier[Tier.PROFILE], *by_tier[Tier.STREAMED]]
    _stream(packer, opportunistic, duplicate_overlap, source_overlap, rest)
    for section in by_tier[Tier.SYSTEM]:
        _fill(packer, section)
    return _finish(packer, sections, budget, counter)


def _stream(
    packer: _Packer,
    sections: Sequence[NodeContent],
    duplicate: float,
    source: float,
    rest: Rest | None = None,
) -> None:
    """Streamed items, best first: each is left out when it repeats a kept one, else taken
    while it fits. An extracted fact (``context.provenance``) is one clause of something
    said: a dated line that tells it — its own source turn shown whole, or any turn or
    episode showing its words — is kept instead of it whichever comes first (the fact is
    given back when the line fits in its place), so a fact never evicts its source."""
    seen: list[Kept] = []
    whole: set[uuid.UUID] = set()  # turns kept and shown whole
    on_screen: set[uuid.UUID] = set()  # turns a kept line shows: its own, those it tells
    for section, item in _by_score(sections):
        if item.hit is not None and item.hit.id in on_screen:
            packer.duplicates += 1  # a better line tells this turn already
            continue
        if _told(item) & on_screen:
            item = _alone(item)  # its replies are on screen: the turn alone
        new = read(section.node, item)
        if new.source is not None and (
            new.source in whole or any(_tells(k.item, new.said, source) for k in seen)
        ):
            packer.duplicates += 1  # its source turn is shown whole, or a line telling it
            continue
        own = _own_facts(item, seen)  # kept facts taken from this very turn
        # An extracted fact yields to what tells it with its date and context: its source
        # turn shown whole, or a turn or episode whose line shows the fact's words. The
        # facts of a turn shown as an excerpt stay beside it (the excerpt may lack them).
        told = [k for k in seen if k.source is not None and _tells(item, k.said, source)]
        others = [k for k in seen if k not in own and k not in told]
        repeated = [k for k in others if repeats(new, k, duplicate=duplicate, source=source)]
        if repeated:
            # A turn that only repeats summaries is shown as what they left out of it, in
            # its place by score (context.rest).
            shown = _rest(rest, new, repeated)
            rested = None if shown is None else read(section.node, shown)
            if rested is None or any(
                repeats(rested, k, duplicate=duplicate, source=source) for k in others
            ):
                packer.duplicates += 1  # a fact that repeats an episode, a reply its decision…
                continue
            item, new = rested.item, rested
        yields = [*told, *(k for k in own if k not in told and _shows_whole(item))]
        if yields and _fits_instead(packer, section, item, yields):
            for k in yields:
                packer.give_back(k.node, k.item)
                seen.remove(k)
                packer.duplicates += 1
        if not _fits_instead(packer, section, item, ()):
            # A question shown with its reply (context.replies): the question alone, then.
            item = _alone(item)
        if packer.take(section, item, droppable=True):
            seen.append(new)
            if new.kind == "turn" and item.hit is not None:
                on_screen |= {item.hit.id, *_told(item)}
                if _shows_whole(item):
                    whole.add(item.hit.id)
        else:
            packer.dropped += 1


def _alone(item: ContextItem) -> ContextItem:
    """A turn shown with the turns after it (``context.replies``) as its line alone."""
    if item.hit is None or ALONE not in item.hit.metadata:
        return item
    return item.model_copy(update={"text": str(item.hit.metadata[ALONE])})


def _told(item: ContextItem) -> set[uuid.UUID]:
    """The turns ``item``'s line shows after its own (none once it is shown alone). A
    hit's metadata is a free mapping: anything but a list of ids under the key tells
    nothing."""
    hit = item.hit
    told = None if hit is None else hit.metadata.get(TOLD)
    if hit is None or not isinstance(told, list) or item.text == hit.metadata.get(ALONE):
        return set()
    try:
        return {uuid.UUID(str(turn)) for turn in told}
    except ValueError:
        return set()


def _rest(rest: Rest | None, new: Kept, repeated: Sequence[Kept]) -> ContextItem | None:
    """``new`` (a turn) as the part of it that the ``repeated`` memories leave out
    (``context.rest``), or None: it repeats a turn, or no such part says anything new."""
    if rest is None or not all(made_from_turns(new, k) for k in repeated):
        return None
    return rest(new.item, set().union(*(k.said for k in repeated)))


def _own_facts(item: ContextItem, seen: Sequence[Kept]) -> list[Kept]:
    """The kept extracted facts whose source is ``item`` (a turn)."""
    if kind(item) != "turn" or item.hit is None:
        return []
    return [k for k in seen if k.source == item.hit.id]


def _tells(item: ContextItem, fact: set[str], bar: float) -> bool:
    """Whether ``item`` is dated (a turn, an episode) and its line shows over ``bar`` of the
    ``fact``'s words."""
    return _dated(item) and word_overlap(fact, words(item.text)) > bar


def _shows_whole(item: ContextItem) -> bool:
    """Whether a turn's line holds every word of the turn (not an excerpt of it)."""
    return item.hit is not None and words(item.hit.text) <= words(item.text)


def _fits_instead(
    packer: _Packer, section: NodeContent, item: ContextItem, kept: Sequence[Kept]
) -> bool:
    """Whether ``item`` fits once the ``kept`` items are given back."""
    refund = sum(packer.item_cost[id(k.item)] for k in kept)
    cost = packer.counter.count(line(item) + "\n") + packer.header_cost(section)
    return cost <= packer.left + refund


def _by_score(sections: Sequence[NodeContent]) -> list[tuple[NodeContent, ContextItem]]:
    """The profile's items in their order, then the streamed items of every section, best
    recall score first (facts and episodes compete for the same tokens); items without a
    score (gists) keep their order after them."""
    pairs = [(s, i) for s in sections for i in s.items]
    return sorted(pairs, key=lambda p: _rank(*p))


def _rank(section: NodeContent, item: ContextItem) -> float:
    if section.tier is Tier.PROFILE:
        return -math.inf
    return -item.hit.score if item.hit is not None else 1.0


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
        cut = truncate(item.text, room, packer.counter) if room > 0 else ""
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
    recalled = (Tier.PROFILE, Tier.STREAMED)
    hits = [i.hit for s in kept if s.tier in recalled for i in s.items if i.hit is not None]
    by_node = _marginal_costs(kept, counter)
    by_tier: dict[str, int] = {}
    for s in kept:
        by_tier[s.tier.value] = by_tier.get(s.tier.value, 0) + by_node[s.node]
    return Assembly(
        text=text,
        sections=kept,
        hits=hits,
        tokens_used=counter.count(text),
        items_dropped=packer.dropped,
        duplicates=packer.duplicates,
        tokens_by_tier=by_tier,
        tokens_by_node=by_node,
    )


def _marginal_costs(kept: Sequence[NodeContent], counter: TokenCounter) -> dict[str, int]:
    """What each section adds to the count of the final text, in display order: the count
    of the text up to and including it minus the count before it (the blank line that opens
    a section is its own). The packer's per-line costs are upper bounds for planning; these
    telescope, so they sum to ``count(text)`` exactly (the report's one source of truth)."""
    costs: dict[str, int] = {}
    before = 0
    for n, section in enumerate(kept, start=1):
        upto = counter.count(render(kept[:n]))
        costs[section.node] = costs.get(section.node, 0) + upto - before
        before = upto
    return costs


def _kept_sections(packer: _Packer, sections: Sequence[NodeContent]) -> list[NodeContent]:
    out = []
    for tier in _DISPLAY_ORDER:
        for s in sections:
            items = packer.kept.get(s.node)
            if s.tier is tier and items:
                out.append(s.model_copy(update={"items": tuple(_display(items))}))
    return out
