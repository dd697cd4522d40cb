"""Scoring a context text against a question, with no model in the loop (pure functions).

- **Normalisation** (SQuAD-style): lowercase (casefold), punctuation and symbols become word
  breaks, the articles *a*, *an*, *the* are dropped, whitespace is collapsed. ``"3:30 PM"``
  → ``"3 30 pm"``, ``"Kemi's"`` → ``"kemi s"``.
- **Containment** is on whole words: the normalised phrase must occur in the normalised
  context as a run of whole words, so ``"6"`` is not found in ``"16"``; its last word may
  carry a plural ``s``/``es`` (``"Thursday"`` is found in ``"on Thursdays"``, ``"dog"`` in
  ``"two dogs"``), since a context may state the same answer in the plural. A gold answer
  that is a day (a month's full name, a day of the month, a year, in either order:
  ``"July 2, 2023"``, ``"2nd of July 2023"``) is found written in either order (``"2 July
  2023"``): the same day. An answer that normalises to nothing is never found.
- **Evidence coverage**: a turn is covered when its normalised text occurs in the context,
  or, for a longer turn, its first 60 normalised characters (extended to the end of the
  word), since a memory may keep only the beginning of a turn. A question's coverage is
  the share of its evidence turns covered. The date a dated line restates inside itself
  (``[8 May 2023]``, ``context.dated``) is the context's decoration, not the turn's text:
  coverage reads past it, wherever the line happens to restate it.
- **Stale shown as current** (knowledge-update questions with stale answers): the context
  holds a stale answer and not the current one, or it holds a stale answer *undated*. An
  occurrence is *dated* when a date mention ends at most 200 characters before it starts
  (or contains it): an ISO or slashed date (``2023-08-11``, ``2023/05/20``), a day with a
  month name (``8 May``, ``May 8th, 2023``) or a month name with a year (``May 2023``).
  Occurrences of a stale answer inside an occurrence of the current answer are ignored
  (``"Saturday"`` in ``"Saturday mornings"``).
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Sequence
from functools import cached_property

__all__ = [
    "DATED_WINDOW_CHARS",
    "PREFIX_CHARS",
    "ContextText",
    "date_mentions",
    "normalise",
]

ARTICLES = frozenset({"a", "an", "the"})
DATED_WINDOW_CHARS = 200
PREFIX_CHARS = 60
_WORD = re.compile(r"[^\W_]+")
# The date a dated line opens with and restates (``context.dated.stamp``).
_STAMP = re.compile(r"\[\d{1,2} [A-Z][a-z]+ \d{4}\]")
_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_ORDINAL = r"(?:st|nd|rd|th)?"
_DAY = rf"\d{{1,2}}{_ORDINAL}"
_DATE = re.compile(
    rf"\b\d{{4}}[-/]\d{{1,2}}[-/]\d{{1,2}}"  # 2023-08-11, 2023/05/20
    rf"|\b{_DAY}\s+(?:of\s+)?{_MONTH}\b(?:\.?,?\s+\d{{4}}\b)?"  # 8 May, 8th of May 2023
    rf"|\b{_MONTH}\.?\s+{_DAY}\b(?:,?\s+\d{{4}}\b)?"  # May 8, May 8th, 2023
    rf"|\b{_MONTH}\.?,?\s+\d{{4}}\b",  # May 2023
    re.IGNORECASE,
)


def _whole_words(needle: str) -> str:
    """A pattern for a normalised ``needle`` as whole words of the padded normalised text,
    its last word perhaps in the plural."""
    plural = "(?:e?s)?" if needle[-1].isalpha() else ""
    return f"(?<= ){re.escape(needle)}{plural}(?= )"


def _words(text: str) -> list[tuple[str, int, int]]:
    """(normalised word, start, end in ``text``) of every kept word."""
    found = []
    for match in _WORD.finditer(text):
        word = match.group().casefold()
        if word not in ARTICLES:
            found.append((word, match.start(), match.end()))
    return found


def normalise(text: str) -> str:
    """Lowercase, punctuation → spaces, articles dropped, whitespace collapsed."""
    return " ".join(word for word, _, _ in _words(text))


def date_mentions(text: str) -> list[tuple[int, int]]:
    """(start, end) of every date mention in ``text`` (see the module's rule)."""
    return [m.span() for m in _DATE.finditer(text)]


# Spelled out, not from ``calendar.month_name``: that follows the locale.
_MONTH_NAME = (
    "january|february|march|april|may|june|july|august|september|october|november|december"
)
_MONTH_FIRST = re.compile(rf"^({_MONTH_NAME}) (\d{{1,2}}){_ORDINAL} (\d{{4}})$")
_DAY_FIRST = re.compile(rf"^(\d{{1,2}}){_ORDINAL} (?:of )?({_MONTH_NAME}) (\d{{4}})$")


def _spellings(needle: str) -> list[str]:
    """``needle`` and, when it is a day (month name, day, year in either order), that day
    in the ways it is written: either order, with or without an ordinal (``2nd``, ``2nd of``)."""
    if match := _MONTH_FIRST.match(needle):
        month, day, year = match.groups()
    elif match := _DAY_FIRST.match(needle):
        day, month, year = match.groups()
    else:
        return [needle]
    n = int(day)
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    forms = [needle]
    for d in (str(n), f"{n}{suffix}"):
        forms += [f"{d} {month} {year}", f"{d} of {month} {year}", f"{month} {d} {year}"]
    return list(dict.fromkeys(forms))


class ContextText:
    """A context, normalised once and queried many times."""

    def __init__(self, text: str) -> None:
        self.raw = text
        words = _words(text)
        self._spans = [(start, end) for _, start, end in words]
        self.normalised = " ".join(word for word, _, _ in words)
        self._padded = f" {self.normalised} "
        starts, at = [], 0
        for word, _, _ in words:
            starts.append(at)
            at += len(word) + 1
        self._starts = starts

    @cached_property
    def _dates(self) -> list[tuple[int, int]]:
        return date_mentions(self.raw)

    def _find_normalised(self, needle: str) -> list[tuple[int, int]]:
        """Raw (start, end) of every whole-word occurrence of a normalised ``needle``."""
        if not needle:
            return []
        spans, words = [], needle.count(" ") + 1
        for match in re.finditer(_whole_words(needle), self._padded):
            first = bisect_left(self._starts, match.start() - 1)  # padded: one space ahead
            spans.append((self._spans[first][0], self._spans[first + words - 1][1]))
        return spans

    def find(self, phrase: str) -> list[tuple[int, int]]:
        """Raw (start, end) of every occurrence of ``phrase`` (normalised, whole words; a
        day in either order)."""
        found = {
            span for form in _spellings(normalise(phrase)) for span in self._find_normalised(form)
        }
        return sorted(found)

    def contains(self, phrase: str) -> bool:
        return bool(self.find(phrase))

    def dated_at(self, offset: int) -> bool:
        """Whether a date mention starts at or before ``offset`` and ends at most
        ``DATED_WINDOW_CHARS`` before it."""
        return any(
            start <= offset and offset - end <= DATED_WINDOW_CHARS for start, end in self._dates
        )

    def covers(self, turn_text: str) -> bool:
        """Whether a turn's text, or its first ``PREFIX_CHARS`` normalised characters
        (to the end of the word), occurs in the context."""
        needle = normalise(turn_text)
        if not needle:
            return False
        if f" {needle} " in self._unstamped:
            return True
        cut = needle.find(" ", PREFIX_CHARS)
        return cut >= 0 and f" {needle[:cut]} " in self._unstamped

    @cached_property
    def _unstamped(self) -> str:
        """The padded normalised text without the dates dated lines restate."""
        return f" {normalise(_STAMP.sub(' ', self.raw))} "

    def coverage(self, evidence: Sequence[str]) -> float | None:
        """Share of the evidence turns covered; ``None`` without evidence."""
        if not evidence:
            return None
        return sum(self.covers(text) for text in evidence) / len(evidence)

    def stale_as_current(self, answer: str, stale: Sequence[str]) -> bool | None:
        """The knowledge-update rule of the module docstring; ``None`` without stale
        answers."""
        if not stale:
            return None
        current = self.find(answer)
        shown = [
            start
            for value in stale
            for start, end in self.find(value)
            if not any(c_start <= start and end <= c_end for c_start, c_end in current)
        ]
        if not shown:
            return False
        if not current:
            return True
        return any(not self.dated_at(start) for start in shown)
