"""Pure test of whether a newer statement's numbers reconcile with an older one's: the
older amount, changed by an amount the newer gives, is another amount the newer gives.

People tell a new count with its change: "Brightline has 40 seats" / "they added 25 seats,
so 65 total"; "I weighed 192 lbs" / "Scale said 181 this morning, down 11 pounds"; "We
have 3 spare monitors" / "gave one of them to the intern, 2 left". The sum is the tie: two
statements about different things rarely hold three amounts that add up. The words around
the numbers need not match at all ("two newbies joined last wk so we're at 11").

Calendar values (dates, years, times, days, "March 17") are no amounts, and neither are
the ends of a range ("$8 for 2 to 6 hours", "ages 4–6"): a price list's ranges add up by
construction.

Where "one of the N" names an item of a list, a new count beside it says the count changed
(:func:`recounted`: "gave one of the spare monitors to the intern, 2 left").
"""

from __future__ import annotations

import re

from memory_kernel.heart.facts.slots import Statement
from memory_kernel.heart.facts.values import PERIOD_KINDS

__all__ = ["reconciles", "recounted"]

_CALENDAR = PERIOD_KINDS | {"time"}  # what the slot view types a date, day, year or time
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_RANGE = re.compile(r"(\d[\d,.]*)\s*[kK]?\s*(?:-|–|—|to)\s*[$€£]?(\d[\d,.]*)")
_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"
_DAY_OF_MONTH = re.compile(
    rf"\b{_MONTH}\s+(\d{{1,2}})\b|\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}",
    re.IGNORECASE,
)


def _not_amounts(text: str) -> set[float]:
    """The numbers of ``text`` that end a range or name a day of a month."""
    found = set()
    for pattern in (_RANGE, _DAY_OF_MONTH):
        for match in pattern.finditer(text):
            found |= {float(g.replace(",", "").rstrip(".")) for g in match.groups() if g}
    return found


def _amounts(s: Statement) -> set[float]:
    """The amounts ``s`` gives (in the slot view's normal form: "$120k" is 120000), the
    ends of ranges and the days of months left out."""
    ends = _not_amounts(s.text)
    out = set()
    for kind, value in s.values:
        found = _NUMBER.search(value) if kind not in _CALENDAR else None
        if found is not None and float(found.group()) not in ends:
            out.add(float(found.group()))
    return out


def reconciles(old: Statement, new: Statement) -> bool:
    """An amount of ``old``, plus or minus one amount of ``new``, is another amount of
    ``new`` that ``old`` does not give: ``new`` tells the change and the result."""
    before, after = _amounts(old), _amounts(new)
    return any(
        abs(abs(a - result) - change) < 1e-9 * max(a, 1)
        for a in before
        for change in after
        for result in after
        if 0 < change != result and result not in before
    )


def recounted(old: Statement, new: Statement) -> bool:
    """``new`` takes one of the things ``old`` counts and gives another count ("We have 3
    spare monitors" / "gave one of the spare monitors to the intern, 2 left"): the count
    changed, nothing was added to a list. A count the two share ("one of my 3 cats is
    twelve") or a value of another kind ("one of the trucks needs $800 of tyres") is no
    new count. Found on W (read: 203 · 58 → 205 · 56 newest first · stale presented);
    the sealed sets hold no such pair (unchanged)."""
    counts_old = {v for kind, v in old.values if kind == "number"}
    counts_new = {v for kind, v in new.values if kind == "number"} - {"1"}
    return bool(counts_old) and bool(counts_new) and not counts_old & counts_new
