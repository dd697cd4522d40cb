"""Pure typed values of single tokens, for the slot view (``slots``): a time, a day, a
date, an amount, a measure, a duration, a count, a rank, a year; and identifiers, the
numbers and codes that name a thing ("Article 25", "unit 2B", "v3") rather than measure it.
"""

from __future__ import annotations

import re

from memory_kernel.heart.facts.normalise import FUNCTION_WORDS, stem, value_of

__all__ = [
    "AMPM", "MONEY", "ORDINAL", "PERIOD_KINDS", "UNIT_SUFFIX", "cited", "identifier", "typed_value",
]  # fmt: skip


def _set(text: str) -> frozenset[str]:
    return frozenset(text.split())


AMPM = re.compile(r"^(\d{1,2})(?::(\d{2}))?\s?([ap])\.?m\.?$", re.IGNORECASE)
UNIT_SUFFIX = re.compile(r"^(\d[\d,.]*)(kg|g|mg|ml|l|km|mi|gb|tb|mb|kb|ms|s|h|x|lbs?|c|f)$")
MONEY = re.compile(r"^([$€£¥])?\s?(\d[\d,]*(?:\.\d+)?)\s?(k|m|bn|million|billion)?$")
_SCALE = {"k": 1e3, "m": 1e6, "bn": 1e9, "million": 1e6, "billion": 1e9}
ORDINAL = re.compile(r"^\d+(?:st|nd|rd|th)$")
_DURATION_UNITS = _set(
    "second seconds sec secs minute minutes min mins hour hours hr hrs day days week weeks "
    "month months year years ms"
)
_MEASURE_UNITS = _set(
    "gb tb mb kb kg g mg ml l km mi lb lbs pound pounds mile miles meter meters m cm mm inch "
    "inches ft feet kcal calories calorie cup cups ms"
)
# One name per unit: "12 min" and "12 minutes" are the same duration.
_UNIT_NAMES = {
    "sec": "second", "secs": "second", "seconds": "second", "min": "minute", "mins": "minute",
    "minutes": "minute", "hr": "hour", "hrs": "hour", "hours": "hour", "days": "day", "mile": "mi",
    "weeks": "week", "months": "month", "years": "year", "lb": "lbs", "pound": "lbs",
    "pounds": "lbs", "calories": "kcal", "calorie": "kcal", "cups": "cup", "miles": "mi",
}  # fmt: skip
_WEEKDAYS = _set("monday tuesday wednesday thursday friday saturday sunday")
_MONTHS = _set("january february march april june july august september october november december")
_CALENDAR = _MONTHS | _WEEKDAYS
_DATE_NEXT = FUNCTION_WORDS | _CALENDAR  # "the first of May", "first Monday"
#: The kinds of value (of :func:`typed_value`) that name a period rather than measure.
PERIOD_KINDS = frozenset({"date", "day", "year"})


def typed_value(token: str, lower: str, nxt: str) -> tuple[str, str] | None:
    """``(type, value)`` of a token that is a value, with the next word as its unit."""
    if lower.endswith("'s") and lower[:-2] in _CALENDAR:
        lower = lower[:-2]  # "July's bill": the month
    plain = lower.isalpha()  # times, amounts and measures all have a digit
    ampm = None if plain else AMPM.match(lower)
    if ampm:
        hours, minutes, half = ampm.groups()
        hour = int(hours) % 12 + (12 if half == "p" else 0)
        return "time", f"{hour}:{minutes or '00'}"
    if lower in _WEEKDAYS or lower.rstrip("s") in _WEEKDAYS:
        return "day", lower.rstrip("s")
    if lower in _MONTHS:
        return "date", lower
    money = None if plain else MONEY.match(lower)
    if money and (money.group(1) or money.group(3)):
        currency, number, scale = money.groups()
        amount = float(number.replace(",", "")) * _SCALE.get(scale or "", 1.0)
        shown = str(int(amount)) if amount.is_integer() else str(amount)
        return ("money" if currency else "number"), f"{currency or ''}{shown}"
    unit = None if plain else UNIT_SUFFIX.match(lower)
    if unit:
        return "measure", f"{unit.group(1).replace(',', '')}{unit.group(2)}"
    value = value_of(lower)
    if value is None:
        return None
    if ":" in value:
        return "time", value
    if value[0] in "$€£¥":
        return "money", value
    if value.endswith("%"):
        return "percent", value
    if value.endswith("th"):  # "the 9th", "June 1st"; before a noun it ranks ("first job")
        return ("rank" if nxt.isalpha() and nxt not in _DATE_NEXT else "date"), value
    if nxt in _MEASURE_UNITS:
        return "measure", f"{value}{_UNIT_NAMES.get(nxt, nxt)}"
    if nxt in _DURATION_UNITS:
        return "duration", f"{value} {_UNIT_NAMES.get(nxt, stem(nxt))}"
    if nxt in ("times", "time") or lower in ("once", "twice", "thrice"):
        return "frequency", value
    if re.fullmatch(r"(19|20)\d\d", value):
        return "year", value
    return "number", value


def identifier(code: str) -> str:
    """The comparable part of an identifier: "v3" and "version 3" are the same one, and so
    are "P1" and "P1s"."""
    version = re.fullmatch(r"v(\d[\d.]*)", code)
    if version:
        return version.group(1)
    code = code.strip(".-")
    return code[:-1] if re.fullmatch(r"[a-z]+\d+s", code) else code


def cited(token: str, low: str, has_digit: bool) -> str | None:
    """The identifier a token after a citation noun gives, if it gives one: a number or a
    code ("Article 25", "unit 2B"), a number in words ("day two" is day 2), a letter or
    capitals ("Gate C", "Phase II"). A lower-case word names nothing ("a week off", "the
    platform org", "slipped a week; new target")."""
    if has_digit:
        return identifier(low)
    number = value_of(low)
    if number is not None and number.isdigit():
        return number
    if token.isupper() and len(token) <= 3 and low not in FUNCTION_WORDS:
        return low
    return None
