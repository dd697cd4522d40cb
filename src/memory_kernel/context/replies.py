"""The answer a recalled question got: the turn that follows it in its episode.

A turn that asks ("What concert was it?") shares the words of a later query about the same
thing, so recall finds it; what was answered is in the turn after it ("It was Matt
Patterson"), which shares few of them and ranks far below. A question without its answer
spends the budget on a line that says nothing; so a recalled turn whose shown part asks a
question is shown with the turn that answered it (``nodes.RecallNode``), when that answer
is short enough to be shown whole (at most ``turn_excerpt_chars``): a chat's answer. A long
reply (advice, a draft) is a document of its own, recalled by its own words; attaching
its excerpt to every question that asked for it spent the budget of several memories
(authored dev conversations: 0.977 → 0.932 answers in context with long replies attached,
0.977 without; LoCoMo dev alike either way, its replies are short).

Pure; the next turn of each asking turn is read in one statement
(``heart.turns.store.next_turns``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memory_kernel.context.budget import ALONE, SOURCE_OVERLAP
from memory_kernel.models.context import ContextItem, MemorySource, NodeContent
from memory_kernel.similarity import word_overlap, words

__all__ = ["ALONE", "REPLY", "asks", "untold"]

#: Metadata of an asking turn's hit shown with its reply: the reply's text, and the line
#: the turn has without it.
REPLY = "answered_by"
_DISTILLED = frozenset({MemorySource.FACT, MemorySource.DECISION})

# A sentence that ends with a question mark (closing quotes and brackets allowed).
_QUESTION = re.compile(r"\?[\"')\]]*(?:\s|$)")


def asks(shown: str) -> bool:
    """Whether ``shown`` (the part of a turn a context shows) asks a question."""
    return _QUESTION.search(shown) is not None


def untold(sections: Sequence[NodeContent]) -> list[NodeContent]:
    """``sections`` with each attached reply that a recalled fact or decision tells (over
    ``SOURCE_OVERLAP`` of the shorter one's words: the memory was drafted from it) taken
    off its question's line again: the distilled memory is shown in the reply's place, as
    the budget keeps it in place of the reply's own turn (``context.budget``)."""
    distilled = [
        words(i.hit.text)
        for s in sections
        for i in s.items
        if i.hit is not None and i.hit.source in _DISTILLED
    ]
    if not distilled:
        return list(sections)
    out = []
    for section in sections:
        items = tuple(_alone(i, distilled) for i in section.items)
        out.append(
            section if items == section.items else section.model_copy(update={"items": items})
        )
    return out


def _alone(item: ContextItem, distilled: Sequence[set[str]]) -> ContextItem:
    hit = item.hit
    if hit is None or REPLY not in hit.metadata:
        return item
    said = words(str(hit.metadata[REPLY]))
    if any(word_overlap(said, memory) > SOURCE_OVERLAP for memory in distilled):
        return item.model_copy(update={"text": str(hit.metadata[ALONE])})
    return item
