"""Pure text features of a fact: tokens, light stems, content words, values, the head.

Everything the fact policy decides is computed from these features, deterministically and
without a model: the default embedder is lexical, so the rules that tell a paraphrase from a
changed value have to look at the words themselves.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, TypeVar

__all__ = [
    "ADVERBS",
    "FUNCTION_WORDS",
    "PAST_IRREGULAR",
    "TextFeatures",
    "features",
    "frozen",
    "normalise_content",
    "past_form",
    "same_stem",
    "stem",
    "tokens",
]

T = TypeVar("T")

# Times, money, plain numbers (with thousands separators, decimals, percent), then words
# (an apostrophe suffix stays attached so "Ana's" is one token).
_TOKEN = re.compile(
    r"\d{1,2}:\d{2}(?::\d{2})?"
    r"|[$€£¥]\s?\d[\d,]*(?:\.\d+)?(?:\s?(?:k|m|bn|million|billion)\b)?"
    r"|\d[\d,]*(?:\.\d+)?%?(?!\w)"
    r"|\w+(?:['’]\w+)?"
)
_TIME = re.compile(r"^(\d{1,2}):(\d{2})(?::(\d{2}))?$")
_NUMBER = re.compile(r"^[$€£¥]?\s?\d[\d,]*(?:\.\d+)?%?")

# Words that carry no meaning of their own for dedup/same-slot decisions: articles,
# pronouns, auxiliaries, light adverbs. Pronouns are handled separately by the head.
_FUNCTION_TEXT = """
a an the and or but if of to in on at by for with from as into onto about over under than
then so too very can could will would shall should may might must just not no nor yes
is are was were be been being am do does did doing done has have had having get got gets
it its this that these those there here i me my mine we us our ours you your yours he him
his she her hers they them their theirs what which who whom whose when where why how
also still now again already yet really quite currently recently lately just actually
some any each every all both either neither such own same other another more most much
many lot lots s t ll ve re d after before during while until since within between through
per via rather
"""
FUNCTION_WORDS = frozenset(_FUNCTION_TEXT.split())

_PRONOUN_HEADS = {
    "i": "i", "me": "i", "my": "i", "we": "we", "our": "we", "us": "we", "you": "you",
    "your": "you", "he": "he", "his": "he", "him": "he", "she": "she", "her": "she",
    "they": "they", "their": "they", "it": "it", "its": "it",
}  # fmt: skip


def _split(words: str) -> list[str]:
    return words.split()


# Adverbs that sit between a subject and its verb ("Farah now owns", "I really love").
ADVERBS = frozenset(
    _split(
        """
        really still just also usually always never now finally actually mostly only even
        totally absolutely definitely recently currently often sometimes already generally
        normally typically officially basically literally honestly somehow probably since
        indeed around roughly approximately nearly almost
        """
    )
)
# Irregular past forms (a third-person subject takes them unchanged).
PAST_IRREGULAR = frozenset(
    _split(
        """
        was were had did got took went came made said left began ran saw gave kept held
        found brought bought paid sent spent told thought felt put set met led sat stood won
        lost sold built drove wrote read rode broke chose drew drank ate fell flew forgot froze
        grew hid hit hurt knew lay let lit meant rang rose shook shot shut sang sank slept slid
        spoke spun stole struck swam swung taught tore threw understood woke wore wound became
        forgave overslept quit caught fought sought dug fed fled hung heard burnt learnt
        """
    )
)


def past_form(word: str) -> bool:
    """A past tense or participle: "moved", "took" (lowercase ``word``)."""
    return (len(word) > 4 and word.endswith("ed")) or word in PAST_IRREGULAR


_DETERMINERS = frozenset({"the", "a", "an", "this", "that", "these", "those"})
_POSSESSIVES = frozenset({"my", "our", "your", "his", "her", "their", "its"})

_UNITS = _split(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen "
    "fourteen fifteen sixteen seventeen eighteen nineteen"
)
_TENS = ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_WORD_NUMBERS: dict[str, str] = {w: str(i) for i, w in enumerate(_UNITS)}
_WORD_NUMBERS.update({w: str(20 + 10 * i) for i, w in enumerate(_TENS)})
_WORD_NUMBERS.update({"once": "1", "twice": "2", "thrice": "3", "dozen": "12", "hundred": "100"})
_WORD_NUMBERS.update({"thousand": "1000", "million": "1000000", "billion": "1000000000"})
_ORDINALS = _split(
    "first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth"
)
_WORD_NUMBERS.update({w: f"{i + 1}th" for i, w in enumerate(_ORDINALS)})
# Months and weekdays are values too: "joined in March" vs "joined in April" is a change.
# ("may" is left out: as a modal verb it is far more common than the month.)
_CALENDAR = frozenset(
    _split(
        "january february march april june july august september october november "
        "december monday tuesday wednesday thursday friday saturday sunday"
    )
)
_ORDINAL_SUFFIX = re.compile(r"^(\d+)(?:st|nd|rd|th)$")


@dataclass(frozen=True, slots=True)
class TextFeatures:
    """What the fact rules look at; built once per text by :func:`features`."""

    text: str
    words: tuple[str, ...]  # lowercase tokens, in order
    content: tuple[str, ...]  # stems of content words (no function words, no values), in order
    values: frozenset[str]  # normalised numbers, amounts, times, ordinals, months, weekdays
    head: str  # who/what the sentence is about: "i", "i:mom", "rachel", "invoice"


def tokens(text: str) -> list[str]:
    """Lowercase tokens; times, amounts and numbers stay whole."""
    return [t.replace("’", "'") for t in _TOKEN.findall(text.lower())]


@lru_cache(maxsize=65_536)
def stem(word: str) -> str:
    """A light, deterministic suffix stripper: enough to match owns/owned, backups/backup,
    moved/move, classes/class without a stemming library."""
    w = word.split("'")[0]
    if len(w) > 4 and w.endswith("ies"):
        w = w[:-3] + "y"
    elif len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
        w = w[:-1]
    for suffix in ("ing", "ed", "ly"):
        if suffix == "ed" and w.endswith("eed"):
            continue  # succeed, need: the "ed" is part of the word
        if len(w) > len(suffix) + 2 and w.endswith(suffix):
            w = w[: -len(suffix)]
            break
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiouls":
        w = w[:-1]  # running -> runn -> run, stopped -> stopp -> stop
    if len(w) > 3 and w.endswith("e"):
        w = w[:-1]
    return w


def same_stem(a: str, b: str) -> bool:
    """Equal stems, or one is a long prefix of the other (night/nightly, deploy/deployment)."""
    if a == b:
        return True
    short, long_ = (a, b) if len(a) <= len(b) else (b, a)
    return len(short) >= 5 and long_.startswith(short)


def value_of(token: str) -> str | None:
    """The normalised value a token denotes, or ``None`` when it is an ordinary word."""
    if token.isalpha():
        # Most tokens are plain words, and every pattern below needs a digit: only the
        # word lists can make a value of them (the learn path runs this per word).
        if token in _WORD_NUMBERS:
            return _WORD_NUMBERS[token]
        return token if token in _CALENDAR else None
    time = _TIME.match(token)
    if time:
        hours, minutes, seconds = time.groups()
        return f"{int(hours)}:{minutes}" + (f":{seconds}" if seconds else "")
    if token in _WORD_NUMBERS:
        return _WORD_NUMBERS[token]
    if token in _CALENDAR:
        return token
    ordinal = _ORDINAL_SUFFIX.match(token)
    if ordinal:
        return f"{int(ordinal.group(1))}th"
    if _NUMBER.fullmatch(token.replace(" ", "")):
        raw = token.replace(" ", "").replace(",", "")
        currency = raw[0] if raw[0] in "$€£¥" else ""
        number = raw.lstrip("$€£¥").rstrip("%")
        percent = "%" if raw.endswith("%") else ""
        try:
            value = float(number)
        except ValueError:
            return raw
        shown = str(int(value)) if value.is_integer() else str(value)
        return f"{currency}{shown}{percent}"
    return None


def _head(words: list[str]) -> str:
    """The sentence's topic: a leading pronoun ("i"), a possessive + noun ("i:mom"), or the
    first content word after a determiner ("invoice", "rachel")."""
    if not words:
        return ""
    first = words[0].split("'")[0]
    if first in _POSSESSIVES and len(words) > 1:
        return f"{_PRONOUN_HEADS[first]}:{stem(words[1])}"
    if first in _PRONOUN_HEADS:
        return _PRONOUN_HEADS[first]
    rest = words[1:] if first in _DETERMINERS else words
    for word in rest:
        if word not in FUNCTION_WORDS and value_of(word) is None:
            return stem(word)
    return stem(first)


_EMPTY: frozenset[Any] = frozenset()


def frozen(items: Iterable[T]) -> frozenset[T]:
    """``frozenset(items)``, or the one shared empty set: parses are cached for the
    process's life, and every object they keep is one more for the garbage collector to
    walk on each full collection."""
    found = frozenset(items)
    return found if found else _EMPTY


@lru_cache(maxsize=65_536)
def features(text: str) -> TextFeatures:
    words = tokens(text)
    values: set[str] = set()
    content: list[str] = []
    for word in words:
        value = value_of(word)
        if value is not None:
            values.add(value)
        elif word.split("'")[0] not in FUNCTION_WORDS:
            content.append(stem(word))
    return TextFeatures(
        text=text,
        words=tuple(words),
        content=tuple(content),
        values=frozen(values),
        head=_head(words),
    )


def normalise_content(text: str) -> str:
    """The exact-duplicate key: lowercase tokens joined by one space (punctuation and
    spacing differences do not make a new fact)."""
    return " ".join(tokens(text))
