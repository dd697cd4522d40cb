"""Pure slot keys for the rule extractor: the slot a parsed clause sets, when the parse is
confident.

The key is built from the holder and the *kind* of value the rest gives — typed by the
fact capability's own slot view (``slots.statement``): a day, a time, an amount, a place —
so "we moved the standup to Fridays" and "the standup is on Thursdays" both set ``standup
day``, while "the bakery opens at 7am" and "the bakery closes at 3pm" set ``bakery open
time`` and ``bakery clos time`` (stems). A key is a strong claim both ways: the kernel
supersedes at once within a key and never merges or replaces across two different keys.
So a key is given only for a few canonical shapes a later statement is likely to repeat;
any other parse gives ``None`` and the kernel's own slot parsing applies.
"""

from __future__ import annotations

import re

from memory_kernel.heart.extraction.rules_parse import (
    HAVE,
    POSSESSIVES,
    PREPOSITIONS,
    Clause,
)
from memory_kernel.heart.extraction.rules_text import ADVERBS, COPULAS, SMALL_TALK, word_set
from memory_kernel.heart.facts.normalise import FUNCTION_WORDS, past_form, stem, value_of
from memory_kernel.heart.facts.slots import statement

__all__ = ["is_name", "slot_key", "value_type"]


_PLACE_PREPOSITIONS = frozenset({"in", "to", "at", "from", "near"})
# Verbs whose place argument is where someone lives.
_RESIDE = frozenset({stem(w) for w in word_set("live lived moved move relocated based settled")})
# Verbs that only say a value changed: the thing is their object, the value follows "to".
_CHANGE = frozenset(
    stem(w)
    for w in word_set("moved switched changed pushed rescheduled bumped shifted postponed delayed")
)
# One word of state after a copula ("is shipped", "is off").
_STATES = word_set(
    "on off live down up done open closed pending ready complete over active inactive "
    "broken fixed green red flaky stable"
)
# Relations of the speaker (kinship, household, work): a holder that is a person.
_RELATIONS = word_set("""
    mother father mom mum dad mama papa parents sister brother sibling siblings son daughter
    kids children wife husband partner spouse boyfriend girlfriend fiance fiancee friend
    cousin aunt uncle grandma grandpa grandmother grandfather grandparents niece nephew
    boss manager colleague coworker roommate flatmate neighbour neighbor therapist doctor
    """)
_CALENDAR = word_set(
    "monday tuesday wednesday thursday friday saturday sunday january february march april "
    "may june july august september october november december"
)
_MAX_HOLDER = 3
_ORDINALS = frozenset(f"{n}th" for n in range(1, 13))
# Verbs that only say that (and so when) a thing happens: "the standup runs at 9",
# "book club meets on Tuesdays", "the party is on the 27th". Starting, ending, opening and
# closing are attributes of their own and keep their verb in the key.
_OCCUR = frozenset(stem(w) for w in word_set("run runs meet meets happen happens occur occurs"))
_WHEN = frozenset({"time", "day", "date"})
_CHANGE_TO = word_set("to from until into back up down")
# Verbs that say what a measure is, as a copula would: "weighs 31 pounds", "costs $5".
_MEASURING = frozenset(
    stem(w) for w in word_set("weigh weighs cost costs last lasts measure total")
)
_UNIT_TYPES = frozenset({"measure", "duration", "frequency"})
_TYPE_WORDS = {
    "money": "amount", "number": "count", "time": "time", "day": "day", "date": "date",
    "year": "year", "percent": "percent", "duration": "duration", "frequency": "frequency",
    "measure": "measure",
}  # fmt: skip


def _holder_key(clause: Clause, speaker: str) -> list[str] | None:
    """The holder as key words: the speaker, a name it mentions, or its content stems."""
    if clause.kind == "first":
        if clause.lower[0] == "my" or (clause.scope and "my" in clause.lower):
            names = [w for w in clause.holder if w[:1].isupper() and w.lower() != "i"]
            if names and not any(w.lower() in PREPOSITIONS for w in clause.holder):
                return [n.lower() for n in names]
            rest = [stem(w.lower()) for w in clause.holder if w.lower() not in FUNCTION_WORDS]
            return [speaker, *rest]
        return [speaker]
    if clause.kind == "plural":
        if clause.lower[0] == "our":
            rest = [stem(w.lower()) for w in clause.holder if w.lower() not in FUNCTION_WORDS]
            return [speaker, *rest] if rest else None
        return [speaker]
    if clause.kind != "noun" or not clause.holder:
        return None
    out = []
    for word in clause.holder:
        low = word.lower().split("'")[0]
        if low in FUNCTION_WORDS:
            continue
        value = value_of(low)
        out.append(value if value is not None else stem(low))
    return out or None


def _person(clause: Clause) -> bool:
    """The holder is someone: the speaker, a name or a relation of the speaker."""
    if clause.kind in ("first", "plural") and clause.lower[0] not in ("my", "our"):
        return True
    if any(w.lower() in _RELATIONS for w in clause.holder):
        return True
    return any(is_name(clause, w) for w in clause.holder)


def is_name(clause: Clause, word: str) -> bool:
    """A capitalised word of the holder that is a name: inside the clause, or a lone
    first word (a capital that only opens the sentence says nothing)."""
    if not word[:1].isupper() or word.lower() in ("i", "i'm", "i've") or word.lower() in SMALL_TALK:
        return False  # "Thanks!" opens a turn; it names nobody
    if value_of(word.lower()) is not None:
        return False
    inside = clause.words.index(word) > 0 if word in clause.words else False
    return inside or len(clause.holder) == 1


def _object_key(rest: tuple[str, ...]) -> list[str] | None:
    """The object noun phrase of a change verb, up to "to"/"from" ("the standup")."""
    out: list[str] = []
    for word in rest:
        low = word.lower()
        if low in ("to", "from", "into", "until"):
            break
        if low in FUNCTION_WORDS or low in POSSESSIVES:
            continue
        if value_of(low) is not None:
            return None
        out.append(stem(low))
    return out if 0 < len(out) <= 3 else None


def value_type(rest: tuple[str, ...], i: int) -> str | None:
    """The type of the value at ``rest[i]`` (the next word is its unit), by the fact
    capability's slot view; ``None`` when it is an ordinary word."""
    word = rest[i].lower()
    valued = word[:1].isdigit() or word[:1] in "$€£¥" or value_of(word) is not None
    if not valued and word.rstrip("s") not in _CALENDAR:
        return None
    if word.isalpha() and (word == "one" or value_of(word) in _ORDINALS):
        return None  # "one of", "first passion": a word, not a value of a slot
    nxt = rest[i + 1] if i + 1 < len(rest) else ""
    if word == "may":
        return "date" if nxt[:1].isdigit() else None  # the month, not the modal
    if re.fullmatch(r"\d{1,3}(?:,\d{3})+", word):
        return "count"  # "2,000" is a number written with a separator, never a year
    view = statement(" ".join(rest[i : i + 2]))
    typed = [item for item in view.items if item[0] == "v"]
    if not typed or not view.items or view.items[0][0] != "v":
        return None
    kind = typed[0][1].split("=")[0]
    return _TYPE_WORDS.get(kind, kind)


def _first_value(rest: tuple[str, ...]) -> tuple[int, str] | None:
    """Where the first typed value of ``rest`` is, and its type."""
    for i in range(len(rest)):
        kind = value_type(rest, i)
        if kind is not None:
            return i, kind
    return None


def _after(rest: tuple[str, ...], at: int, limit: int = 1) -> list[str]:
    """The head of the noun phrase after position ``at`` (the noun a value counts: "2,000
    newsletter subscribers" → "subscrib"), as its last ``limit`` content stems."""
    out: list[str] = []
    for word in rest[at + 1 :]:
        low = word.lower()
        if low in FUNCTION_WORDS or low in POSSESSIVES or value_of(low) is not None:
            if out:
                break
            continue
        out.append(stem(low))
        if len(out) == 3:
            break
    return out[-limit:]


def slot_key(clause: Clause, speaker: str) -> str | None:
    """The slot a positive statement sets, when the parse is confident; else ``None``."""
    holder = _holder_key(clause, speaker)
    verb = clause.verb_word
    rest = clause.rest
    if holder is None or not verb or not rest or len(holder) > _MAX_HOLDER:
        return None
    if value_of(holder[0]) is not None or holder[0][:1].isdigit():
        return None  # "3 sets of 15": a fragment, not a holder
    if (
        clause.kind == "noun"
        and len(holder) > 1
        and clause.lower[len(clause.scope)].endswith("ing")
    ):
        return None  # "Upgrading production from ...": no subject at all
    scope = [stem(w.lower()) for w in clause.scope if w.lower() not in FUNCTION_WORDS]
    base = stem(verb.split("'")[-1]) if "'" in verb else stem(verb)
    first = rest[0].lower()
    place = (
        first in _PLACE_PREPOSITIONS and len(rest) > 1 and rest[1][:1].isupper()
        and value_type(rest, 1) is None
    )  # fmt: skip
    if _person(clause) and place and (verb in COPULAS or "'" in verb or base in _RESIDE):
        return _join(scope, holder, ["city"])
    if base in _CHANGE and clause.kind in ("first", "plural"):
        obj = _object_key(rest)
        found = _first_value(rest)
        if obj and found:
            return _join(scope, obj, [found[1]])
        return None
    found = _first_value(rest)
    if verb in COPULAS or ("'" in verb and verb.split("'")[-1] in ("s", "re", "m")):
        return _copula_key(clause, speaker, scope, holder, rest, found)
    if found is None:
        return None
    at, kind = found
    # The value right after the verb (or its preposition) and at most one word saying what
    # it counts: "opens at 7am", "has 40 desks", "takes 20 mg of lisinopril". A longer
    # predicate is too particular a key for a later statement to repeat it; a change verb
    # with an object ("switched me to ...") changed the object, not the holder.
    before = [w for w in rest[:at] if w.lower() not in FUNCTION_WORDS]
    if before or (base in _CHANGE and rest[0].lower() not in _CHANGE_TO):
        return None
    if base in _MEASURING and kind in ("measure", "amount", "duration"):
        return _join(scope, holder, [kind])  # "Biscuit weighs 31 pounds" = "is 31 pounds"
    if base in _CHANGE or (base in _OCCUR and kind in _WHEN):
        # "X runs at 02:00" and "we moved X to 04:30": both say when X happens.
        return _join(scope, holder, [kind])
    counted = kind not in _WHEN  # "40 desks"; a time's next word ("UTC") counts nothing
    attribute = _after(rest, at + 1 if kind in _UNIT_TYPES else at, limit=1) if counted else []
    action = [] if verb in HAVE else [base]
    return _join(scope, holder, action, attribute, [kind])


def _noun_phrase(rest: tuple[str, ...]) -> list[str]:
    """Content stems of a noun phrase, up to a preposition, a value or a clause break."""
    out: list[str] = []
    for word in rest:
        low = word.lower()
        if low in PREPOSITIONS or low in ADVERBS or value_of(low) is not None:
            break
        if low in FUNCTION_WORDS:
            if out:
                break
            continue
        out.append(stem(low))
    return out if 0 < len(out) <= 3 else []


def _copula_key(
    clause: Clause,
    speaker: str,
    scope: list[str],
    holder: list[str],
    rest: tuple[str, ...],
    found: tuple[int, str] | None,
) -> str | None:
    first = rest[0].lower()
    speaker_itself = clause.kind in ("first", "plural") and clause.lower[0] not in ("my", "our")
    if found:
        # Words between the copula and the value name the attribute ("is rate-limited to
        # 100"); more than one is a predicate too particular to be repeated.
        between = [
            w.lower()
            for w in rest[: found[0]]
            if w.lower() not in FUNCTION_WORDS and not past_form(w.lower())
        ]
        if len(between) > 1:
            return None
        if not speaker_itself:
            return _join(scope, holder, between, [found[1]])
        # "I'm 34", "I've been to 23 countries": the speaker alone is no slot; what the
        # value counts is ("user country count"), and without it there is no key.
        at, kind = found
        counted = _after(rest, at + 1 if kind in _UNIT_TYPES else at, limit=1)
        return _join(scope, holder, counted, [kind]) if counted else None
    agent = len(rest) > 1 and rest[1].lower() == "by"  # "is owned by Kenji": no state
    if (
        not found
        and (first in _STATES or first.endswith("ed"))
        and not speaker_itself
        and not agent
    ):
        return _join(scope, holder, ["status"])
    named = rest[0][:1].isupper() and clause.kind in ("noun", "first") and not speaker_itself
    if not found and named:
        return _join(scope, holder)  # "my manager is Dana Whitfield": user manager
    if not found and first in ("my", "our") and clause.kind == "noun":
        # "Heathrow is my home airport": the slot is the possessed noun, as in "my home
        # airport is Heathrow".
        owned = _noun_phrase(rest[1:])
        return _join(scope, [speaker], owned) if owned else None
    return None


def _join(*parts: list[str]) -> str:
    return " ".join(w for part in parts for w in part if w)
