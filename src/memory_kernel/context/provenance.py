"""Where an extracted fact came from, as the context reads it (pure).

A fact extracted from a conversation (``heart.extraction``) names its source in its
metadata: ``turn_id`` (the stored turn it was taken from) and ``said_at`` (when that turn
was said). Two context rules follow from it:

- **A fact and its own source turn are one memory.** The turn holds the fact's clause plus
  its date and the sentences around it; the fact holds one clause, undated. So when both
  are offered, the turn is the one to show and the fact is redundant — not the other way
  round, which is what a word-overlap rule alone does (a one-clause fact "covers" most of
  its own words, so it would evict the multi-sentence turn). Between such a fact and *any
  other* turn the provenance is known: that turn is not its source, and only a
  near-verbatim repeat is a duplicate.
- **A fact is what was said on a day.** Shown without its source turn, it opens with the
  date it was said (``[8 May 2023] The user lives in Leeds.``): a value the user later
  changed then reads as what was true then, never as current.

- **A fact is a pointer into what was said, not a filler.** A recall node offers at most
  its own few extracted facts (the best); beyond them the budget is filled by the turns
  the facts were taken from, by relevance — otherwise many one-clause facts, each ranking
  high for being short, crowd out the dated turns that hold them and their context. By
  default the context shows none of them at all (``without_extracted``): the profile shows
  the user's preferences by kind, and the turns say the rest.

Facts without this provenance (learned by the host, or by the kernel from episodes) keep
the rules they had: undated, and a turn sharing most of their words is their source.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TypeVar

from memory_kernel.models.context import MemoryHit, MemorySource, NodeContent, Tier

__all__ = ["few_extracted", "said_at", "source_turn", "without_extracted"]

T = TypeVar("T")


def source_turn(hit: MemoryHit) -> uuid.UUID | None:
    """The turn a recalled fact was extracted from (``None``: not an extracted fact, or its
    metadata names no readable turn)."""
    if hit.source is not MemorySource.FACT:
        return None
    return _read(hit, "turn_id", uuid.UUID)


def said_at(hit: MemoryHit) -> datetime | None:
    """When the turn a recalled fact was extracted from was said (``None``: unknown)."""
    if source_turn(hit) is None:
        return None
    return _read(hit, "said_at", datetime.fromisoformat)


def _read(hit: MemoryHit, key: str, parse: Callable[[str], T]) -> T | None:
    """``parse`` of the metadata string at ``key``; ``None`` when absent or unreadable
    (metadata is the host's as well as the extractor's: anything may be there)."""
    raw = hit.metadata.get(key)
    if not isinstance(raw, str):
        return None
    try:
        return parse(raw)
    except ValueError:
        return None


def few_extracted(hits: Sequence[MemoryHit], limit: int) -> list[MemoryHit]:
    """``hits`` (best first) with at most ``limit`` extracted facts, the best ones; every
    other memory as it was."""
    out, extracted = [], 0
    for hit in hits:
        if source_turn(hit) is not None:
            extracted += 1
            if extracted > limit:
                continue
        out.append(hit)
    return out


def without_extracted(sections: Sequence[NodeContent]) -> list[NodeContent]:
    """``sections`` without the facts extracted from a conversation, except the profile's
    (``Tier.PROFILE``: what the user wants is shown by kind). Such a fact is one clause of
    something said, and the turn or episode it came from says it with its date and what was
    around it: at 300 tokens, of the 1,892 extracted-fact lines shown on LoCoMo's
    questions 12 held the answer, and on the authored chats 2 of 40, never the only place
    it was (docs/tuning.md, twentieth round). ``ContextConfig.extracted_facts_shown``
    keeps them."""
    return [
        section
        if section.tier is Tier.PROFILE
        else section.model_copy(
            update={"items": tuple(i for i in section.items if not _extracted(i.hit))}
        )
        for section in sections
    ]


def _extracted(hit: MemoryHit | None) -> bool:
    return hit is not None and source_turn(hit) is not None
