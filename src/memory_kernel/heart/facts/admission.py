"""Pure admission gate for facts: keep specific, useful statements; reject filler,
greetings, platitudes and universal knowledge before they reach long-term memory.

The rules are deliberately about *kinds* of text, not about particular sentences: a fact is
worth keeping when it says something specific about this agent's world (a name, a number, a
place, a "we"/"my", a definite thing), and not worth keeping when every content word is
vague ("something", "stuff", "talked") or when it is a generic statement about a category
("computers process data"). An explicit fact (the caller insists) is always admitted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from memory_kernel.heart.facts.normalise import FUNCTION_WORDS, tokens, value_of

__all__ = ["AdmissionReason", "FactAdmission", "admit_fact"]


def _set(words: str) -> frozenset[str]:
    return frozenset(words.split())


class AdmissionReason(StrEnum):
    EXPLICIT = "explicit"
    SPECIFIC = "specific"
    NO_CONTENT = "no_content"
    GREETING = "greeting_or_acknowledgement"
    VAGUE = "vague_filler"
    PLATITUDE = "platitude"
    UNIVERSAL = "universal_knowledge"


@dataclass(frozen=True, slots=True)
class FactAdmission:
    admitted: bool
    reason: AdmissionReason


_SMALL_TALK = _set(
    """
    hello hi hey hiya howdy greetings morning evening afternoon night bye goodbye cheers
    thanks thank ty please welcome ok okay k kk yes yeah yep yup no nope sure alright
    right cool great nice good fine awesome perfect sounds sound lol haha hmm um uh oh
    ah wow gotcha noted understood agreed np sorry
    """
)
# Words that point at nothing in particular: a fact made only of these says nothing.
_VAGUE = _set(
    """
    thing things stuff something anything everything nothing someone somebody anyone
    somewhere sometime sometimes point while bit kind sort lot way time times moment
    happen happened happens happening go going went gone come came get got do did done
    make made talk talked talking discuss discussed discussing chat chatted say said
    tell told ask asked question questions answer answered think thought let know knew
    see saw seem seems seemed look looked fine good great nice ok okay well bad better
    interesting user assistant conversation topic topics matter matters issue issues
    general various certain usual normal other others
    """
)
# Evaluative predicates of platitudes ("communication is key").
_EVALUATIVE = _set(
    """
    important key essential crucial vital valuable helpful useful good great nice bad
    matters everything priceless powerful
    """
)
# Categories and everyday nouns that generic statements are made about.
_GENERIC_SUBJECTS = _set(
    """
    water fire air earth sun moon sky sea ocean grass snow ice rain people humans person
    life time money health computers computer software hardware code programs
    programming internet data cats dogs birds fish animals plants trees cars food coffee
    tea music teamwork communication honesty practice knowledge learning science math
    technology python javascript java typescript rust go golang ruby php html css sql
    linux windows git docker kubernetes
    """
)
_FIRST_SECOND_PERSON = _set(
    """
    i me my mine we us our ours you your yours
    """
)
_DEFINITIONAL = re.compile(
    r"^\S+(?: \S+)? (?:is|are) (?:a|an|used|made|called|known|the|one|part|kind|type)\b"
)


def _personal(words: list[str]) -> bool:
    return any(w in _FIRST_SECOND_PERSON for w in words)


def _anchored(words: list[str], original: str) -> bool:
    """A value, a possessive or a name: something that points at one particular thing."""
    if any(value_of(w) is not None for w in words):
        return True
    if any("'" in w for w in words):  # possessives: "Priya's", "the app's"
        return True
    # A capitalised word inside the sentence is a name (people, products, places).
    inner = re.findall(r"(?<=[\w,;:] )[A-Z][\w-]*", original)
    return any(name.lower() not in _GENERIC_SUBJECTS for name in inner)


def _universal(words: list[str], original: str, content: list[str]) -> bool:
    """A short generic statement about a category, with nothing specific in it."""
    if len(content) > 5 or not words or _personal(words) or _anchored(words, original):
        return False
    subject = words[0]
    if subject in ("the", "this", "that", "these", "those", "our", "their", "his", "her"):
        return False
    lowered = " ".join(words)
    return subject in _GENERIC_SUBJECTS or bool(_DEFINITIONAL.match(lowered))


def admit_fact(content: str, *, explicit: bool = False) -> FactAdmission:
    """Whether ``content`` is worth storing as a fact, and why."""
    if explicit:
        return FactAdmission(admitted=True, reason=AdmissionReason.EXPLICIT)
    words = tokens(content)
    content_words = [w for w in words if w not in FUNCTION_WORDS]

    def reject(reason: AdmissionReason) -> FactAdmission:
        return FactAdmission(admitted=False, reason=reason)

    if not content_words:
        return reject(AdmissionReason.NO_CONTENT)
    if all(w in _SMALL_TALK for w in content_words):
        return reject(AdmissionReason.GREETING)
    anchored = _anchored(words, content)
    # "We talked for a while" is personal but still says nothing: pronouns do not count here.
    if not anchored and all(w in _VAGUE or w in _SMALL_TALK for w in content_words):
        return reject(AdmissionReason.VAGUE)
    generic = not anchored and not _personal(words)
    if generic and len(content_words) <= 4 and _EVALUATIVE & set(content_words[1:]):
        return reject(AdmissionReason.PLATITUDE)
    if _universal(words, content, content_words):
        return reject(AdmissionReason.UNIVERSAL)
    return FactAdmission(admitted=True, reason=AdmissionReason.SPECIFIC)
