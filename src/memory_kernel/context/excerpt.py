"""The part of a long turn worth showing for a query (pure).

A turn is stored whole, but a 2,000-character reply recalled for one detail would spend the
budget of eight short memories. A turn longer than ``max_chars`` is shown as the run of its
consecutive sentences that fits in ``max_chars`` and holds the most of the query's words
(on ties one that opens with a matching sentence, then the earliest), with ``…`` where
text was left out; a sentence longer than the
whole allowance is cut around its first query word. A turn that holds none of the query's
words (recalled by meaning alone) shows its beginning.

Words match when equal or, for words of five letters or more, when they share their first
five (``thursday``/``thursdays``, ``meeting``/``meets`` do not, ``painting``/``painted`` do):
a cheap stemmer, enough to find the sentence the full-text index matched.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["ELLIPSIS", "excerpt", "sentences"]

ELLIPSIS = "…"
# A stop ends a sentence only before a space, a closing quote or the end: "6.5%", "v4.2.1",
# "node.js" and "example.com" are one word each (split there, a rest rejoined "6. 5%").
_SENTENCE = re.compile(r"(?:[^.!?\n]|[.!?]+(?=[^\s.!?\"')\]]))*(?:[.!?]+|\n|$)")
_WORD = re.compile(r"[^\W_]+")
_STEM = 5


def _stem(word: str) -> str:
    word = word.casefold()
    return word[:_STEM] if len(word) >= _STEM else word


def _stems(text: str) -> set[str]:
    return {_stem(w) for w in _WORD.findall(text)}


def sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence of ``text``, whitespace around it excluded."""
    spans = []
    for match in _SENTENCE.finditer(text):
        start, end = match.span()
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        if end > start:
            spans.append((start, end))
    return spans


def _cut(text: str, start: int, end: int, max_chars: int, wanted: set[str]) -> str:
    """A piece of at most ``max_chars`` of ``text[start:end]`` around its first query word."""
    first = start
    for match in _WORD.finditer(text, start, end):
        if _stem(match.group()) in wanted:
            first = match.start()
            break
    begin = max(start, min(first - max_chars // 4, end - max_chars))
    if begin > start:  # start at a word
        space = text.find(" ", begin, begin + 20)
        begin = space + 1 if space >= 0 else begin
    stop = min(end, begin + max_chars)
    if stop < end:
        space = text.rfind(" ", begin, stop)
        stop = space if space > begin else stop
    return _wrap(text[begin:stop].strip(), begin > 0, stop < len(text.rstrip()))


def _wrap(piece: str, before: bool, after: bool) -> str:
    return f"{ELLIPSIS if before else ''}{piece}{ELLIPSIS if after else ''}"


def excerpt(text: str, query_words: Iterable[str], *, max_chars: int) -> str:
    """``text`` itself when it fits in ``max_chars``, else its best run of sentences (see
    the module docstring)."""
    text = text.strip()
    if len(text) <= max_chars:
        return text
    wanted = {_stem(w) for w in query_words}
    spans = sentences(text)
    said = [_stems(text[s:e]) & wanted for s, e in spans]
    # The best run: most query words, then one that opens with a matching sentence (what
    # matters comes first, next to the date), then the earliest.
    best: tuple[int, int, int, int] | None = None
    for i in range(len(spans)):
        found: set[str] = set()
        j = i
        while j < len(spans) and spans[j][1] - spans[i][0] <= max_chars:
            found |= said[j]
            j += 1
        if j == i:  # the sentence alone is longer than the allowance
            continue
        key = (-len(found), 0 if said[i] else 1, i, j - 1)
        if best is None or key < best:
            best = key
    if best is None or (best[0] == 0 and any(said)):
        # No run of whole sentences fits, or only runs without a query word do: cut the
        # best sentence itself.
        top = max(range(len(spans)), key=lambda n: (len(said[n]), -n))
        return _cut(text, *spans[top], max_chars, wanted)
    _, _, i, j = best
    start, end = spans[i][0], spans[j][1]
    return _wrap(text[start:end], start > 0, end < len(text))
