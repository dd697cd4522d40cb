"""The rest of a turn: what a kept summary of its episode left out (pure).

An episode's summary is a handful of its turns' own sentences (``heart.episodes.summary``),
so a recalled turn — above all a long first message that states the task, the people and
the constraints in one go — shares nearly all of the summary's words, and the budget's
repeat rule (``context.repeats``) dropped the turn as a repeat of its summary. What the
summary left out of it went with it: a preference said in passing ("a proper home office is
non-negotiable", "One firm rule: no HOA"). So a turn that repeats only distilled memories
is shown as its **rest**: its sentences of which those memories carry at most ``bar`` of
the words, in the order they were said (``…`` between non-adjacent ones), as an excerpt
about the query when longer than ``max_chars``. A rest with fewer than ``min_words`` words
the memories do not carry says nothing new, and the turn is dropped as before. A rest keeps
its turn's place by score: the turn was recalled for the query, the rest is a shorter line
of it.

Authored dev conversations (``conversations_dev.jsonl``): 0.977 → 0.992 answers in
context, the three preference misses of long first messages found, one lost to the budget
(a rest line took the place of a summary), stale 0, 938 → 957 tokens (naive 999). LoCoMo
dev alike (349 of 883 answers either way; its turns are short and its summaries are drawn
from many turns). Kept out of the budget's order instead (a rest only with what the budget
had left at the end): 0.985, one of the three found.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from memory_kernel.context.excerpt import ELLIPSIS, excerpt, sentences
from memory_kernel.context.repeats import REST
from memory_kernel.context.replies import ALONE, REPLY, TOLD
from memory_kernel.models.context import ContextItem, MemoryHit
from memory_kernel.similarity import words

__all__ = ["MIN_NEW_WORDS", "rest_of"]

#: A rest must say at least this many words its summary does not: a greeting or a
#: "Where do we even start?" left over is not worth a line.
MIN_NEW_WORDS = 4


def rest_of(
    item: ContextItem,
    carried: set[str],
    *,
    query_words: Iterable[str],
    max_chars: int,
    bar: float,
    render: Callable[[MemoryHit], str],
    min_words: int = MIN_NEW_WORDS,
) -> ContextItem | None:
    """``item`` (a recalled turn) as its part the ``carried`` words leave out, its line
    rendered by ``render`` (``nodes.format_hit`` of its hit with the shown part as its
    text); None when that part has fewer than ``min_words`` new words."""
    hit = item.hit
    if hit is None:
        return None
    text = hit.text
    spans = sentences(text)
    pieces: list[str] = []
    last = -1
    new: set[str] = set()
    for n, (start, end) in enumerate(spans):
        said = words(text[start:end])
        if not said or len(said & carried) / len(said) > bar:
            continue
        if n != last + 1:  # a sentence left out before this one
            pieces.append(ELLIPSIS)
        pieces.append(text[start:end])
        new |= said - carried
        last = n
    if len(new) < min_words:
        return None
    if last != len(spans) - 1:
        pieces.append(ELLIPSIS)
    shown = excerpt(" ".join(pieces), list(query_words), max_chars=max_chars)
    # Shown alone: the reply a question was shown with belongs to its whole line.
    meta = {k: v for k, v in hit.metadata.items() if k not in (REPLY, ALONE, TOLD)}
    rested = hit.model_copy(update={"metadata": {**meta, REST: shown}})
    line = render(rested.model_copy(update={"text": shown}))
    return ContextItem(text=line, hit=rested)
