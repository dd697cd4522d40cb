"""Pure admission gate for facts: keep specific, useful statements; reject filler,
greetings, questions, requests, talk about the conversation itself, platitudes and universal
knowledge before they reach long-term memory.

Two layers, both about *kinds* of text, not particular sentences:

1. rules that are sure: nothing but greetings or vague words, a question, a request, a
   short evaluative platitude, a short generic statement about a category — and, kept,
   the user with a role or a trait ("The user is a teacher": what a person is, never the
   definition the scorer's ``definitional`` sign reads in "X is a …");
2. a learned scorer (``scorer``: logistic regression over :data:`ADMISSION_FEATURES`,
   weights in ``weights/admission.json``) over what the rules let through: how anchored the
   statement is in this agent's world (names, values, identifiers, "my"/"our"/"the user's",
   "this repo"), how much of it is vague, hedged, conversation meta ("the user asked",
   "the assistant"), transient ("at the moment", "today") or generic.

An explicit fact (the caller insists) is always admitted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from memory_kernel.heart.facts.admission_features import (
    ADMISSION_FEATURES,
    CHATTER,
    NAME_DEFINED,
    SMALL_TALK,
    admission_features,
    is_question,
    possessive,
)
from memory_kernel.heart.facts.normalise import FUNCTION_WORDS, tokens, value_of
from memory_kernel.heart.facts.scorer import LinearScorer, packaged

__all__ = ["AdmissionReason", "FactAdmission", "admission_scorer", "admit_fact"]


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
    QUESTION = "question_or_request"
    META = "conversation_meta"
    NOT_SPECIFIC = "not_specific"


@dataclass(frozen=True, slots=True)
class FactAdmission:
    admitted: bool
    reason: AdmissionReason


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
# The user with a role or a trait ("The user is a teacher", "… is the tech lead for
# payments"): what a person is, as "Omar is a dentist" is (``NAME_DEFINED``), never the
# definition of a category. A noun that only says the user is someone says nothing.
_USER_ROLE = re.compile(r"^(?:the )?user (?:is|was) (?:a|an|the) ")
_SOMEONE = _set("person human individual user someone adult")


def _role(words: list[str], features: dict[str, float]) -> bool | None:
    """For "The user is a/an/the …" without vague, hedged or passing words: whether it names
    a role or a trait (``True``) or only that the user is someone (``False``); ``None``
    otherwise (the scorer decides)."""
    text = " ".join(words)
    role = _USER_ROLE.match(text)
    if role is None or any(features[n] for n in ("vague", "hedge", "transient", "passing_state")):
        return None
    return not all(w in _SOMEONE for w in text[role.end() :].split() if w not in FUNCTION_WORDS)


def _personal(words: list[str]) -> bool:
    return any(w in _FIRST_SECOND_PERSON for w in words)


def _anchored(words: list[str], original: str) -> bool:
    """A value, a possessive or a name: something that points at one particular thing."""
    if any(value_of(w) is not None for w in words):
        return True
    if any(possessive(w) for w in words):  # "Priya's", "the app's"
        return True
    # A capitalised word inside the sentence is a name (people, products, places).
    # ("I" is no name: "Ugh, I'm so frustrated.")
    inner = re.findall(r"(?<=[\w,;:] )[A-Z][\w-]*", original)
    return any(
        name.lower() not in _GENERIC_SUBJECTS and name.lower() not in FUNCTION_WORDS
        for name in inner
    )


def _evaluated(words: list[str]) -> bool:
    """An evaluative predicate: "... is key", "... matters", "... are essential"."""
    for i, word in enumerate(words[1:], 1):
        if word in _EVALUATIVE and (
            words[i - 1] in ("is", "are", "very", "so") or word == "matters"
        ):
            return True
    return False


def _universal(words: list[str], original: str, content: list[str], named: bool) -> bool:
    """A short generic statement about a category, with nothing specific in it (``named``:
    it opens with a name, which only a definition shape makes generic)."""
    if len(content) > 5 or not words or _personal(words) or _anchored(words, original):
        return False
    subject = words[0]
    if subject in ("the", "this", "that", "these", "those", "our", "their", "his", "her"):
        return False
    lowered = " ".join(words)
    return subject in _GENERIC_SUBJECTS or bool(
        (NAME_DEFINED if named else _DEFINITIONAL).match(lowered)
    )


def admission_scorer() -> LinearScorer:
    """The packaged admission scorer."""
    return packaged("admission", ADMISSION_FEATURES)


def _learned_reason(features: dict[str, float]) -> AdmissionReason:
    """The kind of filler the scorer rejected, by its strongest sign."""
    if features["meta"] > 0:
        return AdmissionReason.META
    if features["vague"] > 0 or features["hedge"] > 0:
        return AdmissionReason.VAGUE
    if features["request"] > 0:
        return AdmissionReason.QUESTION
    if features["bare_subject"] > 0 and not features["personal"]:
        return AdmissionReason.UNIVERSAL
    return AdmissionReason.NOT_SPECIFIC


def admit_fact(
    content: str, *, explicit: bool = False, scorer: LinearScorer | None = None
) -> FactAdmission:
    """Whether ``content`` is worth storing as a fact, and why (``scorer``: the learned
    layer; the packaged one by default)."""
    if explicit:
        return FactAdmission(admitted=True, reason=AdmissionReason.EXPLICIT)
    words = tokens(content)
    content_words = [w for w in words if w not in FUNCTION_WORDS]

    def reject(reason: AdmissionReason) -> FactAdmission:
        return FactAdmission(admitted=False, reason=reason)

    if not content_words:
        return reject(AdmissionReason.NO_CONTENT)
    if all(w in SMALL_TALK for w in content_words):
        return reject(AdmissionReason.GREETING)
    anchored = _anchored(words, content)
    if not anchored and any(w in CHATTER for w in words):
        return reject(AdmissionReason.GREETING)  # "Thanks so much, that's super helpful!"
    # "We talked for a while" is personal but still says nothing: pronouns do not count here.
    if not anchored and all(w in _VAGUE or w in SMALL_TALK for w in content_words):
        return reject(AdmissionReason.VAGUE)
    generic = not anchored and not _personal(words)
    if generic and len(content_words) <= 4 and _evaluated(words):
        return reject(AdmissionReason.PLATITUDE)
    features = admission_features(content)
    question = is_question(content)
    role = None if question else _role(words, features)
    if role is False:
        return reject(AdmissionReason.NOT_SPECIFIC)
    if role:
        return FactAdmission(admitted=True, reason=AdmissionReason.SPECIFIC)
    if _universal(words, content, content_words, features["named_subject"] > 0):
        return reject(AdmissionReason.UNIVERSAL)
    if question:
        return reject(AdmissionReason.QUESTION)
    model = scorer or admission_scorer()
    if model.probability([features[name] for name in model.features]) < model.threshold("admit"):
        return reject(_learned_reason(features))
    return FactAdmission(admitted=True, reason=AdmissionReason.SPECIFIC)
