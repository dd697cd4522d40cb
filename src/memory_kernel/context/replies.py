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

The same holds one step further in a chat: a turn that tells something ("Last week we had
a meaningful experience at a military memorial") is recalled by the query's words, the
other side asks about it ("How did they react when they saw it?") and the detail is in
the answer to that ("They were awestruck and humbled"), two turns on. So a recalled turn
shown whole whose next turn asks is shown with that question and its answer, when the two
together are at most ``turn_excerpt_chars`` (a short exchange; an excerpt of a long turn is
a document, not a chat line). LoCoMo dev, written after reading the misses of conv-26, -30,
-41 (the answer two turns after a recalled one in 6 of their 16 reachable single-hop
misses): 0.418 → 0.428 there, and on conv-42, -43, -44 (held out) 0.378 → 0.386; single-hop
gains on both, temporal loses 3 of 90 on the held-out half (the lines cost more tokens).
Authored dev conversations unchanged (0.992, stale 0); each of the two turns within the
limit instead, excerpts too: 0.970 and a stale value shown (advice replies that end asking
"Want me to…?"); the two together within it, excerpts too: 0.985, the stale value still
shown (an excerpt of a long route plan followed by a question about a garden).

A line shows each turn once: a turn that a kept line already tells (recalled itself, or
attached after another) is not shown again on a line of its own, and a line whose attached
turns are already on screen is shown alone (``context.budget``, by turn id: the words of a
question and its answer recalled apart, and then together on the better one's line, were
the same memory twice). Blind conversations (``docs/probes``): 0.789 → 0.807 answers in
context at 300 tokens, 811 → 764 tokens at 1,000 with the same answers; authored dev
0.742 → 0.750 at 300, unchanged at 1,000; LoCoMo dev 0.409 → 0.408, evidence 0.695 → 0.697.

Pure; the two turns after each recalled turn are read in one statement
(``heart.turns.store.next_turns``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from memory_kernel.context.budget import ALONE, SOURCE_OVERLAP, TOLD
from memory_kernel.models.context import ContextItem, MemorySource, NodeContent
from memory_kernel.similarity import word_overlap, words

if TYPE_CHECKING:  # the rule stays pure: no storage module at run time
    from memory_kernel.heart.turns.store import StoredTurn

__all__ = ["ALONE", "FOLLOW_UP", "REPLY", "TOLD", "answers", "asks", "untold"]

#: How many turns may follow a recalled one on its line: a question about it, its answer.
FOLLOW_UP = 2
#: Metadata of a recalled turn's hit shown with the turns after it: their text, and the
#: line the turn has without them.
REPLY = "answered_by"
_DISTILLED = frozenset({MemorySource.FACT, MemorySource.DECISION})

# A sentence that ends with a question mark (closing quotes and brackets allowed).
_QUESTION = re.compile(r"\?[\"')\]]*(?:\s|$)")


def asks(shown: str) -> bool:
    """Whether ``shown`` (the part of a turn a context shows) asks a question."""
    return _QUESTION.search(shown) is not None


def answers(
    shown: str, following: Sequence[StoredTurn], *, max_chars: int, whole: bool = True
) -> list[StoredTurn]:
    """What a recalled turn is shown with (the module docstring): the reply to a turn whose
    ``shown`` part asks; for a turn shown ``whole``, a question the next turn asks about
    it, with that question's answer; nothing when those turns together are longer than
    ``max_chars``."""
    if asks(shown):
        chain = list(following[:1])
    elif whole and len(following) >= FOLLOW_UP and asks(following[0].content):
        chain = list(following[:FOLLOW_UP])
    else:
        return []
    return chain if sum(len(t.content.strip()) for t in chain) <= max_chars else []


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
