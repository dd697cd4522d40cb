"""When a recalled memory only repeats one the context already shows (pure).

``context.budget`` keeps streamed items best first; each is read here as a :class:`Kept`
and left out when it repeats one already kept: two of a kind (two turns, two distilled
memories) when they share over ``duplicate`` of the smaller one's words (near-verbatim:
the same memory told twice); a turn and a distilled memory (a fact, a decision, an
episode's summary), either way round, over ``source`` (the turn is where the memory came
from); an extracted fact and a turn that is not its known source turn as two of a kind.
Decisions with different outcomes are never repeats.

A turn shown as the rest of itself (``context.rest``: the part a kept summary does not
carry) says only that rest: its ``REST`` metadata is what later items are compared with.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass

from memory_kernel.context.provenance import source_turn
from memory_kernel.models.context import ContextItem, MemorySource
from memory_kernel.similarity import word_overlap, words

__all__ = ["REST", "Kept", "Rest", "kind", "made_from_turns", "read", "repeats"]

#: A turn hit's metadata: the part of the turn its line shows when a kept memory carries
#: the rest (``context.rest``).
REST = "rest_shown"


#: ``rest(item, carried)``: a turn shown as its part outside the ``carried`` words, or None
#: when that part says nothing new (``context.rest``; what ``budget.assemble`` calls).
Rest = Callable[[ContextItem, set[str]], ContextItem | None]


@dataclass(slots=True)
class Kept:
    """A streamed item as the repeat rules read it."""

    node: str
    item: ContextItem
    said: set[str]  # what the memory says, not how its line is decorated (date, role)
    kind: str
    outcome: str | None
    source: uuid.UUID | None  # an extracted fact's source turn


def read(node: str, item: ContextItem) -> Kept:
    """``item`` of section ``node`` as the repeat rules read it."""
    hit = item.hit
    if hit is None:
        said = words(item.text)
    else:
        said = words(str(hit.metadata[REST]) if REST in hit.metadata else hit.text)
    origin = None if hit is None else source_turn(hit)
    return Kept(node, item, said, kind(item), outcome(item), origin)


def kind(item: ContextItem) -> str:
    """``turn`` (what was said) or ``memory`` (what was made of it)."""
    return "turn" if item.hit is not None and item.hit.source is MemorySource.TURN else "memory"


def outcome(item: ContextItem) -> str | None:
    """A decision's outcome: a success and a failure of the same action are not repeats."""
    hit = item.hit
    return hit.outcome if hit is not None and hit.source is MemorySource.DECISION else None


def _bar(new: Kept, old: Kept, duplicate: float, source: float) -> float:
    """The overlap above which ``new`` repeats the kept ``old``: ``source`` between a turn
    and what is made from turns (a fact, a decision, an episode's summary), ``duplicate``
    between two of a kind, and between a turn and an extracted fact whose source turn is
    known: any other turn is not where it came from."""
    same_kind = (new.kind == "turn") == (old.kind == "turn")
    if same_kind or new.source is not None or old.source is not None:
        return duplicate
    return source


def repeats(new: Kept, old: Kept, *, duplicate: float, source: float) -> bool:
    """Whether ``new`` only repeats the kept ``old`` (see the module docstring)."""
    limit = _bar(new, old, duplicate, source)
    return new.outcome == old.outcome and word_overlap(new.said, old.said) > limit


def made_from_turns(new: Kept, old: Kept) -> bool:
    """Whether ``new`` is a turn and ``old`` a memory made from turns (not an extracted
    fact, whose own source turn is known)."""
    return new.kind == "turn" and old.kind != "turn" and new.source is None and old.source is None
