"""Dated material in the context (pure): what was said carries its date next to every value.

A turn or an episode is something that happened: what it says was true *then*. Its line
opens with its date (``[8 May 2023] user: …``), but a long line lets a value drift far
from that date — 300 characters into a paragraph "my 10k PB is 48:30" reads as a present
fact, not as what was said in November. So a dated line restates its date, shortly
(``[8 May 2023]``), at the first sentence boundary past ``DATE_REACH`` characters from the
last one; a sentence longer than that is cut at a word boundary for the restatement. A
line is one line: the newlines of a message become `` / `` (a list item on its own line
would lose the date and the bullet it belongs to).

The cost is a few tokens per long line, and it is counted: the budget measures each line
as rendered.
"""

from __future__ import annotations

import re
from datetime import date, datetime

from memory_kernel.dates import day

__all__ = ["DATE_REACH", "flatten", "stamp", "within_reach"]

#: How far (in characters) a date governs the text after it: about two sentences. The
#: conversations suite counts a value as dated when it starts within 200 characters of a
#: date mention (``eval.answers``); a word starting within this reach meets that rule.
DATE_REACH = 190
# Where a line may take a restated date: after a sentence's end (its punctuation, closing
# quotes and the space after it), or after the `` / `` that stands for a newline.
_BOUNDARY = re.compile(r"[.!?]+[\"')\]]*\s+|\s/\s")
# A period after these ends no sentence: "Dr. Marsh", "St. Vincent's", "e.g. this", "U.S.
# law", and a list's "2. Support people".
_ABBREVIATION = re.compile(r"(?:\b[A-Z][a-z]{0,2}|\b[a-z]|[a-zA-Z]\.[a-zA-Z]|\b\d{1,2})\.$")
# Inside a sentence too long for the reach: after a clause's punctuation, else a space that
# does not bind a number to the word before it ("July 12", "page 200").
_CLAUSE = re.compile(r"[,;:]\s+|\s[-–—]\s")
_SPACE = re.compile(r"\s(?!\d)")
_NEWLINES = re.compile(r"\s*\n\s*")


def stamp(value: date | datetime) -> str:
    """``[8 May 2023]``: the date a dated line opens with and restates."""
    return f"[{day(value)}]"


def flatten(text: str) -> str:
    """One line: each run of newlines (and the spaces around it) becomes `` / ``."""
    return _NEWLINES.sub(" / ", text.strip())


def _boundaries(text: str) -> list[int]:
    found = []
    for match in _BOUNDARY.finditer(text):
        if match.group().strip() == "/" or not _ABBREVIATION.search(text, 0, match.start() + 1):
            found.append(match.end())
    return found


def _split(piece: str, reach: int) -> list[str]:
    """A piece longer than ``reach``: parts of at most ``reach`` characters, cut after the
    last clause punctuation within it, else at the last space not before a number."""
    out = []
    while len(piece) > reach:
        window = piece[:reach]
        cuts = [m.end() for m in _CLAUSE.finditer(window)] or [
            m.start() + 1 for m in _SPACE.finditer(window, 1)
        ]
        cut = cuts[-1] if cuts else reach
        out.append(piece[:cut])
        piece = piece[cut:]
    return [*out, piece] if piece else out


def _pieces(text: str, reach: int) -> list[str]:
    """``text`` cut at its sentence boundaries, each piece with the space that follows it;
    a piece longer than ``reach`` is split further (``_split``)."""
    out: list[str] = []
    at = 0
    for end in [*_boundaries(text), len(text)]:
        if end > at:
            out += _split(text[at:end], reach)
            at = end
    return out


def within_reach(text: str, when: date | datetime, *, reach: int = DATE_REACH) -> str:
    """``text`` (one line, the part after its opening date) with the date restated before
    each piece (sentence, or part of a long one) whose last word would start more than
    ``reach`` characters after the last date."""
    if len(text) <= reach:
        return text
    again = stamp(when)
    out: list[str] = []
    since = 0  # characters since the end of the last date
    for piece in _pieces(text, reach):
        last_word = since + len(piece.rstrip()) - len(piece.rstrip().split(" ")[-1])
        if out and last_word > reach:
            out.append(f"{again} ")
            piece = piece.lstrip()
            since = 1
        out.append(piece)
        since += len(piece)
    return "".join(out).strip()
