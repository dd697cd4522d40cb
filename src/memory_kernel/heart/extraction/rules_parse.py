"""Pure clause parse for the rule extractor: who a clause is about (the holder), its main
verb, and what follows it.

A clause is read as ``[fronted scope] holder verb [adverbs] rest``. The holder is the first
person (the speaker), a possessive noun phrase ("my sister Noor"), a named thing or a noun
phrase ("the staging cluster"); the main verb is found past auxiliaries and modals ("I've
switched" → "switched", "got pushed" → "pushed"). ``rules_keys`` turns a parse into a slot
key.
"""

from __future__ import annotations

from dataclasses import dataclass

from memory_kernel.heart.extraction.rules_text import (
    ADVERBS,
    COPULAS,
    MODALS,
    PAST_IRREGULAR,
    word_set,
)
from memory_kernel.heart.facts.normalise import past_form, stem
from memory_kernel.heart.facts.slots import stem_is_verb

__all__ = ["DETERMINERS", "HAVE", "POSSESSIVES", "PREPOSITIONS", "Clause", "parse"]


_FIRST = frozenset({"i", "i'm", "i've", "i'd", "i'll", "my", "me"})
_PLURAL = frozenset({"we", "we're", "we've", "we'll", "our", "us"})
_PRONOUNS = word_set(
    "you you're your he he's she she's they they're it it's this that these those there "
    "there's here which who"
)
DETERMINERS = word_set("the a an this that these those every each")
POSSESSIVES = word_set("my our your his her their its")
PREPOSITIONS = word_set(
    "in on at after before since during for by within outside inside from until"
)
HAVE = frozenset({"has", "have", "had", "'ve", "got", "owns", "own", "keep", "keeps"})


@dataclass(frozen=True, slots=True)
class Clause:
    """One clause, parsed."""

    words: tuple[str, ...]
    lower: tuple[str, ...]
    kind: str  # "first" | "plural" | "pronoun" | "noun" | "none"
    holder: tuple[str, ...]  # the holder's words as written (without determiners)
    scope: tuple[str, ...]  # a fronted phrase ("In summer", "On Monday")
    verb: int  # index of the main verb in ``words`` (len(words) when none)

    @property
    def verb_word(self) -> str:
        return self.lower[self.verb] if self.verb < len(self.lower) else ""

    @property
    def rest(self) -> tuple[str, ...]:
        """The words after the verb and its adverbs."""
        i = self.verb + 1
        while i < len(self.lower) and self.lower[i] in ADVERBS:
            i += 1
        return self.words[i:]


def _is_verb(word: str, nxt: str) -> bool:
    if word in COPULAS or word in MODALS or word in HAVE or word in PAST_IRREGULAR:
        return True
    if word.endswith("n't") or word in ("do", "does", "did", "gets", "get"):
        return True
    if stem_is_verb(stem(word)) or (len(word) > 4 and word.endswith("ed")):
        return True
    third = len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is"))
    opens = nxt[:1].isdigit() or nxt in DETERMINERS or nxt in POSSESSIVES or nxt[:1] in "$€£¥"
    return third and (opens or nxt in PREPOSITIONS or nxt == "to")


def _verb_at(lower: list[str], start: int) -> int:
    for i in range(start, len(lower)):
        word = lower[i]
        if word in ADVERBS and i + 1 < len(lower):
            continue
        if i > start and lower[i - 1] in DETERMINERS | POSSESSIVES:
            continue
        nxt = lower[i + 1] if i + 1 < len(lower) else ""
        if _is_verb(word, nxt):
            return i
    return len(lower)


_PERFECT = word_set("have has had 've 'd")


def _main_verb(lower: list[str], at: int) -> int:
    """Past an auxiliary to the verb it carries: "I've switched" → "switched", "I'll get"
    → "get"; a copula stays (its complement is the value or the state)."""
    if at >= len(lower):
        return at
    word = lower[at]
    aux = word.split("'")[-1] if "'" in word else word
    aux = f"'{aux}" if "'" in word else aux
    passive = aux in ("got", "get", "gets")  # "got pushed to 10:00"
    auxiliary = aux in _PERFECT or aux in MODALS or aux in ("do", "does", "did")
    if not (auxiliary or passive):
        return at
    i = at + 1
    while i < len(lower) and lower[i] in ADVERBS:
        i += 1
    if i >= len(lower):
        return at
    nxt = lower[i]
    participle = past_form(nxt)
    if (aux in _PERFECT or passive) and (participle or nxt == "been"):
        return i
    if passive:
        return at
    if aux not in _PERFECT and (stem_is_verb(stem(nxt)) or nxt in COPULAS):
        return i
    return at


def _after_adverbs(lower: list[str], at: int) -> int:
    while at < len(lower) - 1 and lower[at] in ADVERBS:
        at += 1
    return at


def parse(words: list[str]) -> Clause:
    """The clause view of a sentence's words (see the module docstring)."""
    lower = [w.lower() for w in words]
    start, scope = 0, tuple[str, ...]()
    if lower and lower[0] in PREPOSITIONS:
        # A fronted scope ends at the first subject word after it.
        for i in range(1, min(len(lower), 8)):
            if lower[i] in _FIRST | _PLURAL or lower[i] in DETERMINERS | POSSESSIVES:
                start, scope = i, tuple(words[:i])
                break
    if start >= len(lower):
        return Clause(tuple(words), tuple(lower), "none", (), scope, len(words))
    head = lower[start]
    if head in _FIRST:
        kind, verb = "first", (start if head != "my" else _verb_at(lower, start + 1))
    elif head in _PLURAL:
        kind, verb = "plural", (start if head != "our" else _verb_at(lower, start + 1))
    elif head in _PRONOUNS:
        kind, verb = "pronoun", start
    else:
        kind, verb = "noun", _verb_at(lower, start + 1)
    if kind in ("first", "plural") and verb == start:
        # "I'm" / "we've": the verb is inside the word; otherwise the next word.
        # After "I" / "we" the next word that is no adverb is the verb, known or not.
        verb = start if "'" in head else _after_adverbs(lower, start + 1)
    holder = tuple(
        w
        for w in words[start:verb]
        if w.lower() not in DETERMINERS and w.lower() not in ADVERBS and w.lower() != "my"
    )
    return Clause(tuple(words), tuple(lower), kind, holder, scope, _main_verb(lower, verb))
