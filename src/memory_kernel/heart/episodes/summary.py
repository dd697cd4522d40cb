"""An ended episode's summary, built from its turns (pure, extractive, no model).

The summary is a handful of the episode's own sentences, chosen so that it says what the
session was about and what is true at its end:

1. **Sentences.** Every turn is cut into sentences (``.``, ``!``, ``?``, line breaks and list
   bullets end one); sentences under three content words (greetings, "Thanks!") are dropped.
2. **Key sentences.** A sentence scores by how central its words are to the episode — a
   content word used in k of the episode's n turns weighs ``(k - 1)·ln((n + 1) / k)``: the
   session's topic words weigh, a one-off digression does not, and neither do the words of
   nearly every turn (the participants' names) — divided by the square root of its length
   (a long sentence is not better for being long), plus a bonus per specific detail it
   states (a number, a capitalised name inside the sentence that is not in half the turns).
   The user's sentences count double: what the user says about themselves and their task
   is what the memory is for; the assistant's replies are kept verbatim as turns anyway. A
   question counts half: it asks, it states nothing. A sentence that announces a changed
   value ("…came through: we're now at 6.5%", "the club moved to Thursdays") and states a
   detail counts double: it is what is true at the session's end, and without it the
   older value said in an earlier session would read as current.
3. **Newest values win.** Sentences are taken newest first; an older sentence that a newer
   one already taken restates with one value changed — all its content words but one are in
   the newer sentence, and they are at least half of its words — is an older version and is
   dropped: "our book club meets on Tuesday evenings" gives way to "…so our book club meets
   on Thursday evenings now" said later. Two sentences that only share a topic ("planning a
   trip to the Lakes in May" / "Catbells sounds right for the Lakes trip") differ in more
   than one word and are both kept.
4. **Budget.** The best-scoring survivors are kept while they fit in ``max_chars`` and are
   shown in the order they were said.

The start summary (the first message) is the fallback when the episode has no turns.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from memory_kernel.heart.facts.relation import CHANGE_MARKERS

__all__ = ["SummaryTurn", "summarise_turns"]

_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+|^\s*[-*•]\s+", re.MULTILINE)
_WORD = re.compile(r"[^\W_]+")
_NUMBER = re.compile(r"\d")
_NAME = re.compile(r"(?<=\s)[A-Z][a-z]+")
_MIN_WORDS = 3
_USER_WEIGHT = 2.0
_QUESTION_WEIGHT = 0.5
_DETAIL_BONUS = 0.5
_CHANGE_WEIGHT = 2.0
_SAME_THING = 0.5
_CHANGED_VALUES = 1
# Function words carry no topic; the list is short on purpose (a summary needs no recall).
_STOP_TEXT = (
    "a an the and or but if so of to in on at by for with from as is are was were be been "
    "being am i me my we our you your he she it its they them their this that these those "
    "what which who whom do does did have has had not no yes can could will would should "
    "just also very really about into than then there here how when where why all any "
    "some more most much many one get got let lets sure okay ok thanks thank please "
    # Reactions: they carry the tone of a chat, not what it was about.
    "wow cool great awesome amazing nice love glad yeah yep hey hi hello oh ah totally "
    "sounds good lovely super"
)
_STOP = frozenset(_STOP_TEXT.split())


@dataclass(frozen=True, slots=True)
class SummaryTurn:
    role: str
    content: str
    at: datetime


@dataclass(frozen=True, slots=True)
class _Sentence:
    turn: int  # index of its turn (time order)
    position: int  # order within the episode
    text: str
    words: frozenset[str]
    user: bool


def _content_words(text: str) -> frozenset[str]:
    words = (m.group().casefold() for m in _WORD.finditer(text))
    return frozenset(w for w in words if len(w) > 1 and w not in _STOP)


def _sentences(turns: Sequence[SummaryTurn]) -> list[_Sentence]:
    found: list[_Sentence] = []
    for n, turn in enumerate(turns):
        for part in _SPLIT.split(turn.content):
            text = " ".join(part.split())
            words = _content_words(text)
            if len(words) >= _MIN_WORDS:
                found.append(_Sentence(n, len(found), text, words, turn.role == "user"))
    return found


def _scores(sentences: Sequence[_Sentence], turns: int) -> list[float]:
    # In how many turns each word occurs: a word of one turn only is not the topic, and a
    # word of nearly every turn (the participants' names, "really") tells nothing either.
    spread: Counter[str] = Counter()
    for n in range(turns):
        spread.update(set().union(*(s.words for s in sentences if s.turn == n)))
    weight = {w: (k - 1) * math.log((turns + 1) / k) for w, k in spread.items()}
    scores = []
    for s in sentences:
        central = sum(weight[w] for w in s.words)
        names = [m for m in _NAME.findall(s.text) if 2 * spread[m.casefold()] <= turns]
        details = len(_NUMBER.findall(s.text)) + len(names)
        score = central / math.sqrt(len(s.words)) + _DETAIL_BONUS * min(details, 4)
        score *= _USER_WEIGHT if s.user else 1.0
        score *= _CHANGE_WEIGHT if details and not CHANGE_MARKERS.isdisjoint(s.words) else 1.0
        scores.append(score * (_QUESTION_WEIGHT if s.text.endswith("?") else 1.0))
    return scores


def _restates(older: frozenset[str], newer: frozenset[str]) -> bool:
    """Whether ``newer`` says what ``older`` said, with at most one value changed."""
    novel = len(older - newer)
    return novel <= _CHANGED_VALUES and len(older & newer) >= _SAME_THING * len(older)


def summarise_turns(turns: Sequence[SummaryTurn], *, max_chars: int, fallback: str) -> str:
    """The episode's summary from its ``turns`` (in time order); ``fallback`` when no
    sentence of them says enough. See the module docstring for the rule."""
    ordered = sorted(turns, key=lambda t: t.at)
    sentences = _sentences(ordered)
    if not sentences:
        return fallback
    scores = _scores(sentences, len(ordered))
    current: list[_Sentence] = []  # newest first: a sentence with a newer version is out
    for s in reversed(sentences):
        if not any(_restates(s.words, newer.words) for newer in current):
            current.append(s)
    chosen: list[_Sentence] = []
    used = 0
    for s in sorted(current, key=lambda s: (-scores[s.position], s.position)):
        cost = len(s.text) + (1 if chosen else 0)
        if used + cost <= max_chars:
            chosen.append(s)
            used += cost
    if not chosen:  # even the best sentence is longer than the budget: cut it
        best = min(current, key=lambda s: (-scores[s.position], s.position))
        return best.text[: max(0, max_chars - 1)].rstrip() + "…"
    return " ".join(s.text for s in sorted(chosen, key=lambda s: s.position))
