"""Dates as memory shows them (pure): how a day is written, and relative time made absolute
(the context and the rule extractor use both).

A turn says "yesterday" on the day it was said; read months later, "yesterday" means
nothing. So when a recalled turn (or episode summary) is shown, it is followed by the dates
its relative expressions meant, resolved against the time the turn was said — ``(yesterday:
7 May 2023)`` — after the text, which stays as it was said:

- ``today``/``tonight``/``this morning`` → that day; ``yesterday``/``last night`` → the day
  before; ``tomorrow`` → the day after;
- ``last Saturday`` → the last Saturday before that day; ``last week``/``last weekend`` → "the
  week (weekend) before" that day;
- ``last``/``this``/``next`` ``month``/``year`` → the month or year;
- ``3 days ago``, ``two weeks ago`` → that day; ``4 years ago`` → that year.

Days are written ``8 May 2023`` — unambiguous in any locale, and how people and models
write them. Nothing else of the text changes; the stored turn is untouched.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta

__all__ = ["day", "resolve_relative"]

_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "couple of": 2,
}  # fmt: skip
_COUNT = r"(\d{1,2}|a|an|one|two|three|four|five|six|seven|eight|nine|ten|couple of)"
_PATTERN = re.compile(
    r"\b(?:"
    r"(?P<day>today|tonight|this (?:morning|afternoon|evening)|yesterday|last night|tomorrow)"
    rf"|last (?P<weekday>{'|'.join(_WEEKDAYS)})"
    r"|(?P<lastweek>last (?:week|weekend))"
    r"|(?P<rel>last|this|next) (?P<unit>month|year)"
    rf"|(?P<count>{_COUNT}) (?P<agounit>days?|weeks?|months?|years?) ago"
    r")\b",
    re.IGNORECASE,
)


def day(value: date | datetime) -> str:
    """``8 May 2023``."""
    return f"{value.day} {value:%B %Y}"


def _month(value: date, shift: int) -> str:
    index = value.year * 12 + value.month - 1 + shift
    return f"{date(index // 12, index % 12 + 1, 1):%B %Y}"


def _ago(when: date, count: int, unit: str) -> str:
    if unit.startswith("day"):
        return day(when - timedelta(days=count))
    if unit.startswith("week"):
        return day(when - timedelta(weeks=count))
    if unit.startswith("month"):
        return _month(when, -count)
    return str(when.year - count)


def _meaning(match: re.Match[str], when: date) -> str | None:
    said = match.group(0).lower()
    if match.group("day"):
        shift = -1 if said in ("yesterday", "last night") else 1 if said == "tomorrow" else 0
        return day(when + timedelta(days=shift))
    if weekday := match.group("weekday"):
        back = (when.weekday() - _WEEKDAYS.index(weekday.lower())) % 7 or 7
        return day(when - timedelta(days=back))
    if match.group("lastweek"):
        return f"the {said.split()[1]} before {day(when)}"
    if rel := match.group("rel"):
        shift = {"last": -1, "this": 0, "next": 1}[rel.lower()]
        if match.group("unit").lower() == "month":
            return _month(when, shift)
        return str(when.year + shift)
    count = match.group("count").lower()
    n = int(count) if count.isdigit() else _NUMBERS.get(count)
    return None if n is None else _ago(when, n, match.group("agounit").lower())


def resolve_relative(text: str, said_at: datetime) -> str:
    """``text`` followed by the dates its relative time expressions meant when it was said
    at ``said_at``: "… yesterday …" → "… yesterday … (yesterday: 7 May 2023)". The note
    comes after the text, so the words said stay as they were said."""
    when = said_at.date()
    notes: dict[str, str] = {}
    for match in _PATTERN.finditer(text):
        found = _meaning(match, when)
        if found is not None:
            notes.setdefault(match.group(0).lower(), found)
    if not notes:
        return text
    return f"{text} ({'; '.join(f'{said}: {meant}' for said, meant in notes.items())})"
