"""What the user wants: the clauses the rule extractor marks as a preference.

A preference holds for every later conversation whatever it is about ("I like evidence-based
info rather than mommy-blog stuff" answers "What should I read to prepare for labour?",
which shares none of its words), so the context shows the user's preferences by kind
(``context.traits``), not by the query's words. Three shapes of English say one, each a
closed class rather than phrases taken from data:

- a verb of wanting, liking or avoiding with the speaker as holder, negated or not: "I
  prefer …", "We love …", "I don't want to use any budgeting apps …";
- a norm: a label that names one over what it rules ("One firm rule: no HOA"), or a
  predicate that names one ("a proper home office is non-negotiable");
- a standing instruction: a "please" request to the other party that says it holds beyond
  this answer ("Please keep code examples in TypeScript", "… in answers, not pseudo-code",
  "always …", "from now on …"); a one-off request ("Please give me a recipe") is no fact.

Only the user's: a transcript's named speaker ("Melanie: I love camping") is not the user
the profile is about, and what they want stays a plain fact (``rules.extract_text``).
"""

from __future__ import annotations

import re

from memory_kernel.heart.extraction.rules_parse import DETERMINERS, Clause
from memory_kernel.heart.extraction.rules_text import (
    ADVERBS,
    COPULAS,
    NORMS,
    REQUEST_OPENERS,
    word_set,
    words,
)

__all__ = ["norm_label", "prefers", "standing_request"]


_WANTING = word_set(
    """
    like likes love loves prefer prefers want wants wanna hate hates dislike dislikes avoid
    avoids enjoy enjoys adore adores detest detests loathe loathes refuse refuses
    loving enjoying liking hating preferring avoiding
    """
)
# Auxiliaries and negations between the holder and the verb ("I really don't want", "I've
# been loving").
_BEFORE_VERB = word_set("do does don't doesn't didn't not never always been")
_NORM_WORDS = 3  # a predicate or a label's head phrase: "a must", "the top priority"
_LABEL = re.compile(r"^([^:]{1,60}):\s+(?=\S)")
# What makes a request hold beyond the answer it is asked in: it asks to go on doing
# something, says when (always, from now on), or names the other party's answers at large
# (a plural without "the": "give me answers as bullet points", not "the answers to …").
# Only with "please": between friends "Keep it up!", "Keep me posted", "Never give up!" are
# encouragement (LoCoMo's chats hold hundreds), not instructions.
_STANDING = re.compile(
    r"\b(?:keep|always|never|from now on|going forward|in future|in the future|every time"
    r"|whenever|(?<!the )(?:answers|responses|replies))\b",
    re.IGNORECASE,
)


def prefers(clause: Clause) -> bool:
    """Whether a kept clause states a preference: the speaker (or "we") wants, likes or
    avoids something, or a thing is called a norm ("… is non-negotiable")."""
    if clause.kind in ("first", "plural"):
        return _wanting_after(clause.lower, clause.verb)
    if clause.kind == "noun" and clause.verb_word in COPULAS:
        complement = [w.lower() for w in clause.rest if w.lower() not in DETERMINERS]
        return 0 < len(complement) <= _NORM_WORDS and complement[-1] in NORMS
    return False


def _wanting_after(lower: tuple[str, ...], at: int) -> bool:
    while at < len(lower) and (lower[at] in ADVERBS or lower[at] in _BEFORE_VERB):
        at += 1
    return at < len(lower) and lower[at] in _WANTING


def norm_label(raw: str) -> tuple[str, str] | None:
    """``("rule", "no HOA")`` for "One firm rule: no HOA": a short label whose last word
    names a norm, and what it rules; ``None`` for any other clause."""
    match = _LABEL.match(raw.strip())
    if match is None:
        return None
    label = [w.lower() for w in words(match.group(1))]
    ruled = raw.strip()[match.end() :].strip().rstrip(".!")
    if not label or len(label) > _NORM_WORDS + 1 or label[-1] not in NORMS or not ruled:
        return None
    return label[-1], ruled


def standing_request(raw: str) -> bool:
    """Whether a clause is a request to the other party that holds beyond this answer."""
    lower = [w.lower() for w in words(raw)]
    asks = bool(lower) and lower[0] in REQUEST_OPENERS and "please" in lower
    return asks and _STANDING.search(raw) is not None
