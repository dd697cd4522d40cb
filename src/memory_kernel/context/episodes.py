"""Episodes in a small budget (pure): a session's gist shown as its part about the query.

An episode is a session's gist: several sentences, the longest line a context holds. In a
1,000-token context that is fine; in a 300-token one a single episode took 42-46% of the
tokens (conversations dev, blind chats), and the turns that held the answer no longer fit.
So an episode whose line would take more than ``ContextConfig.episode_budget_share`` of the
turn's budget is shown as its run of sentences about the query (``context.excerpt``), like
a long turn. Its hit holds the excerpt too: what the context shows is what the repeat
rules (``context.repeats``) compare with the other lines, so a turn is not left out for
repeating a sentence of the episode that is not shown. ``search_memory`` returns episodes
whole.

This runs on the assembled sections, prefetched or fetched, because the budget is the
turn's: a prefetch does not know it.
"""

from __future__ import annotations

from collections.abc import Iterable

from memory_kernel.context.excerpt import excerpt
from memory_kernel.context.nodes import format_hit
from memory_kernel.models.context import ContextItem, MemorySource, NodeContent

__all__ = ["CHARS_PER_TOKEN", "episode_chars", "shorten_episodes"]

#: The default token estimator's ratio (``context.tokens``): what a share of the budget
#: allows in characters.
CHARS_PER_TOKEN = 4
#: An excerpt shorter than this holds no sentence worth a line.
_MIN_CHARS = 80


def episode_chars(budget: int, share: float) -> int:
    """The characters an episode's line may take in a context of ``budget`` tokens."""
    return max(_MIN_CHARS, int(budget * share * CHARS_PER_TOKEN))


def shorten_episodes(
    section: NodeContent, query_words: Iterable[str], max_chars: int
) -> NodeContent:
    """``section`` with each episode longer than ``max_chars`` shown as its excerpt."""
    wanted = list(query_words)
    items = tuple(_shortened(item, wanted, max_chars) for item in section.items)
    if all(new is old for new, old in zip(items, section.items, strict=True)):
        return section
    return section.model_copy(update={"items": items})


def _shortened(item: ContextItem, wanted: list[str], max_chars: int) -> ContextItem:
    hit = item.hit
    if hit is None or hit.source is not MemorySource.EPISODE or len(hit.text) <= max_chars:
        return item
    shown = hit.model_copy(update={"text": excerpt(hit.text, wanted, max_chars=max_chars)})
    return ContextItem(text=format_hit(shown), hit=shown)
