"""Pure test of whether a statement announces that a value changed, by the constructions
English announces a change with (not by a bag of words).

The read scorer (``read_resolution``) weighs whether the newer of two recalled facts
announces a change. The slot view's ``Statement.change`` is a loose bag of words that the
write-time frame rules need ("new", "up", "from", "since", "finally"...): it fires on about
one look-alike in six that is *not* an update ("The new laptop has a 1 TB SSD", "The job
retries up to 3 times"). Here a change is one of these constructions, each a closed class:

- a verb of changing a value with its target or source: "switched to Neovim", "moved the
  frontend monorepo to pnpm", "pushed to 10:00", "revised the due date to January 27",
  "handed to Priyanka's team", "cut ... to 60 minutes" (the verb, then "to", "into",
  "over" or "from" within a few words);
- an adverb of the present against the past: "now", "again", "anymore", "no longer",
  "lately", "these days", "nowadays", "from now on", "as of", "instead", "currently";
  a count or level moving: "we're up to 14", "down to four", "makes it number 24",
  "made it to React 18.3";
- arriving at a new level: "crossed 2,000", "hit six months", "reached 10k";
- a habit that holds up to now: "I've been loving the Hoka Clifton", "been into";
- the old value given up: "retired my Ghosts", "dropped keto", "parted ways with Linda";
- a new one acquired: "the office has a new number", "got a new manager", or a heading
  "New email: …".

Between two statements, a correction is a change too (:func:`corrects`): the newer one
denies a word the older one states, in contrast with what it puts instead ("the plumber is
Barry, not Gary").

A literal "go to" ("Ava goes to Lincoln Elementary") is no change: going is not among the
verbs of changing a value. A cap ("retries up to 3 times") is none either: "up to" counts
only after a form of "be" or "go" ("we're up to 14", "went up to 250").
"""

from __future__ import annotations

import re
from functools import lru_cache

from memory_kernel.heart.facts.normalise import FUNCTION_WORDS, tokens

__all__ = ["announces_change", "announces_change_from", "change_verb_at", "corrects"]

_NUMBER = r"(?:\d[\d,.]*|one|two|three|four|five|six|seven|eight|nine|ten|a hundred|a thousand)"
# A verb of changing a value, then its target or source within four words.
_CHANGE_VERB = re.compile(
    r"\b(?:switch|mov|chang|bump|push|revis|hand|shift|migrat|upgrad|downgrad|reschedul"
    r"|replac|swapp?|transferr?|convert|rais|lower|cut|increas|decreas|adjust|defer"
    r"|extend|stretch|reduc|dropp?)\w*\b(?:\W+[\w'-]+){0,4}?\W+(?:to|into|over|from)\b",
    re.IGNORECASE,
)
_CONSTRUCTIONS = (
    _CHANGE_VERB,
    *(
        re.compile(pattern, re.IGNORECASE)
        for pattern in (
            # The present against the past.
            r"\b(?:now|again|anymore|any more|no longer|lately|these days|nowadays|from now on"
            r"|as of|instead|currently|makes? (?:it|that)|made it to)\b",
            r"\b(?:is|are|was|were|'re|'s|am|'m|went|gone|goes|go|just)\s+(?:up|down)\s+to\b",
            # Arriving at a new level.
            r"\b(?:crossed|crossing|hits?|hitting|reached|reaching|passed|passing|topped)\b"
            rf"(?:\W+[\w'-]+){{0,2}}?\W+{_NUMBER}\b",
            # A habit that holds up to now.
            r"\b(?:i've|we've|i have|we have|has|have|'ve)\s+been\s+(?:\w+ing|into)\b",
            # The old value given up.
            r"\b(?:retired|ditched|quit|cancell?ed|gave up|parted ways|stopped|dropped)\b",
            # A new one acquired.
            r"\b(?:has|have|had|got|gets|getting)\s+(?:a\s+|an\s+)?new\b",
            r"^\W*new\s+[\w' -]{1,30}:",
        )
    ),
)
# ", not Gary", "— not Tuesdays", "Tuesdays not Thursdays": the word a contrastive "not"
# denies — after punctuation or a word that is no auxiliary ("is not", "I'm not" negate).
_DENIED = re.compile(
    r"(?:([\w'-]+)|[,;:\u2014\u2013-])\s*(?:and\s+|but\s+)?not\s+([\w'-]+)", re.IGNORECASE
)
_AUXILIARIES = frozenset(
    {
        "is", "are", "was", "were", "am", "be", "been", "being", "do", "does", "did", "has",
        "have", "had", "can", "could", "will", "would", "shall", "should", "must", "may",
        "might", "need", "dare",
    }
)  # fmt: skip


# The pair rules ask it of the newer fact several times per pair (veto, frame, merge guard).
@lru_cache(maxsize=16_384)
def announces_change(text: str) -> bool:
    """``text`` says that something now holds a value other than before (see the module
    docstring for the constructions)."""
    return any(pattern.search(text) for pattern in _CONSTRUCTIONS)


def change_verb_at(text: str) -> int | None:
    """Where the first verb of changing a value with its target or source starts in
    ``text`` ("My teacher had to *switch* me to Mondays"); ``None`` where there is none."""
    found = _CHANGE_VERB.search(text)
    return found.start() if found else None


def corrects(old: str, new: str) -> bool:
    """``new`` denies, in contrast with what it puts instead, a word ``old`` states."""
    stated = set(tokens(old)) - FUNCTION_WORDS
    for m in _DENIED.finditer(new):
        before = (m.group(1) or "").lower()
        if before in _AUXILIARIES or "'" in before:  # "is not", "it's not": a negation
            continue
        if m.group(2).lower() in stated:
            return True
    return False


def announces_change_from(old: str, new: str) -> bool:
    """``new`` announces a change, or corrects ``old``."""
    return announces_change(new) or corrects(old, new)
