"""Pure clause parse for the rule extractor: who a clause is about (the holder), its main
verb, what follows it, and the slot key that parse supports when it is confident.

A clause is read as ``[fronted scope] holder verb [adverbs] rest``. The holder is the first
person (the speaker), a possessive noun phrase ("my sister Noor"), a named thing or a noun
phrase ("the staging cluster"). The key is built from the holder and the *kind* of value
the rest gives — typed by the fact capability's own slot view (``slots.statement``): a day,
a time, an amount, a place — so "we moved the standup to Fridays" and "the standup is on
Thursdays" both set ``standup day``, while "the bakery opens at 7am" and "the bakery closes
at 3pm" set ``bakery open time`` and ``bakery close time``. Any parse it is not sure of gives
no key, and the kernel's own slot parsing applies.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memory_kernel.heart.extraction.rules_text import ADVERBS, COPULAS, MODALS, PAST_IRREGULAR
from memory_kernel.heart.facts.normalise import FUNCTION_WORDS, stem, value_of
from memory_kernel.heart.facts.slots import statement, stem_is_verb

__all__ = ["Clause", "is_name", "parse", "slot_key", "value_type"]


def _set(text: str) -> frozenset[str]:
    return frozenset(text.split())


_FIRST = frozenset({"i", "i'm", "i've", "i'd", "i'll", "my", "me"})
_PLURAL = frozenset({"we", "we're", "we've", "we'll", "our", "us"})
_PRONOUNS = _set(
    "you you're your he he's she she's they they're it it's this that these those there "
    "there's here which who"
)
_DETERMINERS = _set("the a an this that these those every each")
_POSSESSIVES = _set("my our your his her their its")
_PREPOSITIONS = _set("in on at after before since during for by within outside inside from until")
_PLACE_PREPOSITIONS = frozenset({"in", "to", "at", "from", "near"})
_HAVE = frozenset({"has", "have", "had", "'ve", "got", "owns", "own"})
# Verbs whose place argument is where someone lives.
_RESIDE = frozenset({stem(w) for w in _set("live lived moved move relocated based settled")})
# Verbs that only say a value changed: the thing is their object, the value follows "to".
_CHANGE = frozenset(
    stem(w)
    for w in _set("moved switched changed pushed rescheduled bumped shifted postponed delayed")
)
# One word of state after a copula ("is shipped", "is off").
_STATES = _set(
    "on off live down up done open closed pending ready complete over active inactive "
    "broken fixed green red flaky stable"
)
# Relations of the speaker (kinship, household, work): a holder that is a person.
_RELATIONS = _set("""
    mother father mom mum dad mama papa parents sister brother sibling siblings son daughter
    kids children wife husband partner spouse boyfriend girlfriend fiance fiancee friend
    cousin aunt uncle grandma grandpa grandmother grandfather grandparents niece nephew
    boss manager colleague coworker roommate flatmate neighbour neighbor therapist doctor
    """)
_CALENDAR = _set(
    "monday tuesday wednesday thursday friday saturday sunday january february march april "
    "may june july august september october november december"
)
_MAX_HOLDER = 3
_UNIT_TYPES = frozenset({"measure", "duration", "frequency"})
_TYPE_WORDS = {
    "money": "amount", "number": "count", "time": "time", "day": "day", "date": "date",
    "year": "year", "percent": "percent", "duration": "duration", "frequency": "frequency",
    "measure": "measure",
}  # fmt: skip


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
    if word in COPULAS or word in MODALS or word in _HAVE or word in PAST_IRREGULAR:
        return True
    if word.endswith("n't") or word in ("do", "does", "did", "gets", "get"):
        return True
    if stem_is_verb(stem(word)) or (len(word) > 4 and word.endswith("ed")):
        return True
    third = len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is"))
    opens = nxt[:1].isdigit() or nxt in _DETERMINERS or nxt in _POSSESSIVES or nxt[:1] in "$€£¥"
    return third and (opens or nxt in _PREPOSITIONS)


def _verb_at(lower: list[str], start: int) -> int:
    for i in range(start, len(lower)):
        word = lower[i]
        if word in ADVERBS and i + 1 < len(lower):
            continue
        if i > start and lower[i - 1] in _DETERMINERS | _POSSESSIVES:
            continue
        nxt = lower[i + 1] if i + 1 < len(lower) else ""
        if _is_verb(word, nxt):
            return i
    return len(lower)


_PERFECT = _set("have has had 've 'd")


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
    participle = (len(nxt) > 4 and nxt.endswith("ed")) or nxt in PAST_IRREGULAR
    if (aux in _PERFECT or passive) and (participle or nxt == "been"):
        return i
    if passive:
        return at
    if aux not in _PERFECT and (stem_is_verb(stem(nxt)) or nxt in COPULAS):
        return i
    return at


def parse(words: list[str]) -> Clause:
    """The clause view of a sentence's words (see the module docstring)."""
    lower = [w.lower() for w in words]
    start, scope = 0, tuple[str, ...]()
    if lower and lower[0] in _PREPOSITIONS:
        # A fronted scope ends at the first subject word after it.
        for i in range(1, min(len(lower), 8)):
            if lower[i] in _FIRST | _PLURAL or lower[i] in _DETERMINERS | _POSSESSIVES:
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
        verb = start if "'" in head else _verb_at(lower, start + 1)
    verb = _main_verb(lower, verb)
    holder = tuple(
        w
        for w in words[start:verb]
        if w.lower() not in _DETERMINERS and w.lower() not in ADVERBS and w.lower() != "my"
    )
    return Clause(tuple(words), tuple(lower), kind, holder, scope, verb)


def _holder_key(clause: Clause, speaker: str) -> list[str] | None:
    """The holder as key words: the speaker, a name it mentions, or its content stems."""
    if clause.kind == "first":
        if clause.lower[0] == "my" or (clause.scope and "my" in clause.lower):
            names = [w for w in clause.holder if w[:1].isupper() and w.lower() != "i"]
            if names and not any(w.lower() in _PREPOSITIONS for w in clause.holder):
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
    if not word[:1].isupper() or word.lower() in ("i", "i'm", "i've"):
        return False
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
        if low in FUNCTION_WORDS or low in _POSSESSIVES:
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


def _after(rest: tuple[str, ...], at: int, limit: int = 2) -> list[str]:
    """Content stems after position ``at`` (the noun a value counts), up to ``limit``."""
    out: list[str] = []
    for word in rest[at + 1 :]:
        low = word.lower()
        if low in FUNCTION_WORDS or low in _POSSESSIVES or value_of(low) is not None:
            if out:
                break
            continue
        out.append(stem(low))
        if len(out) == limit:
            break
    return out


def slot_key(clause: Clause, speaker: str) -> str | None:
    """The slot a positive statement sets, when the parse is confident; else ``None``."""
    holder = _holder_key(clause, speaker)
    verb = clause.verb_word
    rest = clause.rest
    if holder is None or not verb or not rest or len(holder) > _MAX_HOLDER:
        return None
    if value_of(holder[0]) is not None or holder[0][:1].isdigit():
        return None  # "3 sets of 15": a fragment, not a holder
    if clause.kind == "noun" and clause.lower[len(clause.scope)].endswith("ing"):
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
    if before:
        return None
    if base in _CHANGE:
        return _join(scope, holder, [kind])
    attribute = _after(rest, at + 1 if kind in _UNIT_TYPES else at, limit=1)
    action = [] if verb in _HAVE else [base]
    return _join(scope, holder, action, attribute, [kind])


def _participle(word: str) -> bool:
    return (len(word) > 4 and word.endswith("ed")) or word in PAST_IRREGULAR


def _noun_phrase(rest: tuple[str, ...]) -> list[str]:
    """Content stems of a noun phrase, up to a preposition, a value or a clause break."""
    out: list[str] = []
    for word in rest:
        low = word.lower()
        if low in _PREPOSITIONS or low in ADVERBS or value_of(low) is not None:
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
            if w.lower() not in FUNCTION_WORDS and not _participle(w.lower())
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
