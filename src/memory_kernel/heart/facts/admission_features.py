"""Pure features of one candidate fact for the learned admission scorer.

Each feature measures a kind of text, from closed word classes of English and the shape of
tokens, never a phrase of the training rows: how anchored the statement is (names, values,
identifiers, possessives, "this"/"our"), how vague or hedged, whether it talks about the
conversation or the agent rather than the world, whether it is transient or generic.
"""

from __future__ import annotations

import re
from functools import lru_cache

from memory_kernel.heart.facts.normalise import (
    ADVERBS,
    FUNCTION_WORDS,
    past_form,
    tokens,
    value_of,
)

__all__ = [
    "ADMISSION_FEATURES", "CHATTER", "NAME_DEFINED", "SMALL_TALK", "TRANSIENT",
    "admission_features", "is_question", "is_request", "possessive",
]  # fmt: skip


def _set(text: str) -> frozenset[str]:
    return frozenset(text.split())


ADMISSION_FEATURES = (
    "content_words", "names", "named_subject", "values", "codes", "possessive", "personal",
    "user_subject", "deictic", "vague", "hedge", "meta", "transient", "bare_subject",
    "definitional", "evaluative", "short_unanchored", "condition", "request", "value_referent",
    "definite_subject", "passing_state",
)  # fmt: skip

_INDEFINITE = _set(
    """
    something someone somebody somewhere sometime anything anyone anybody stuff things thing
    some few various certain general several kind sort bit lot
    """
)
# Nouns of measure that are vague only as a quantity: "a lot of", "a bit", not "the parking
# lot" or "a 64-bit build".
_AMOUNT_NOUNS = _set("bit lot")
_HEDGES = _set("may might could perhaps possibly maybe probably seems seem seemed likely")
# The conversation and the agent as the topic: speech acts, chat objects, the roles.
_SPEECH_ACTS = _set(
    """
    said says asked asks ask talked talk talking mentioned mention mentions referred refer
    replied reply greeted greet chatted discussed discuss thought
    """
)
_CONVERSATION = _set("conversation chat assistant agent interface")
_PARTICIPANTS = _set("user assistant agent i we")
# States a person is in for a while rather than is ("hungry", "on vacation": stage-level
# predicates, against individual-level ones like "vegetarian" or "allergic").
_PASSING_STATES = _set(
    """
    hungry thirsty tired sleepy exhausted sick ill unwell bored busy stressed ready stuck
    lost confused vacation holiday
    """
)
# Feelings pass too, but what one feels about something is often what is asked later ("How
# does Jon feel about the opening?"): only a clause that says nothing else is dropped.
_FEELINGS = _set(
    """
    nervous upset annoyed worried excited glad happy sad curious grateful thankful lucky
    proud thrilled relieved blessed amazed impressed inspired obsessed stoked pumped
    frustrated overwhelmed disappointed surprised
    """
)
# A moment that has no date: "at the moment", "right now", "later". Not "now" or
# "currently" (they mark the value that holds: "Farah now owns the dbt project"), nor a day
# ("today", "yesterday": a dated event, "I went to the dentist yesterday").
_MOMENT = _set("moment right earlier later soon")
#: What passes, shared with the rule extractor, which keeps "I'm vegetarian" and drops "I'm
#: so tired today" or "We're so grateful": states, feelings, moments and the days of a state.
TRANSIENT = _PASSING_STATES | _FEELINGS | _MOMENT | _set("today tonight yesterday")
_EVALUATIVE = _set(
    """
    important key essential crucial vital valuable helpful useful good great nice bad
    healthy practice matters challenges hard easy best better worse
    """
)
_DEICTIC = _set("this these our ours my mine your their his her its")
_DETERMINERS = _set("the a an this that these those every each some any no all")
# Suffixes of abstract common nouns: a bare subject with one is a category (a plural "-s"
# is told by its verb, ``_opens_with_a_name``).
_COMMON_NOUN = re.compile(r"(?:tion|sion|ment|ness|ity|ance|ence|ing|ism|ics|ology)$")
_PERSONAL = _set("i me my we us our you your i'm i've we're")
_REQUEST_OPENERS = _set("please remind tell show give summarize summarise explain help let")
_QUESTION_OPENERS = _set(
    "what which who whom whose when where why how can could would should do does did is are"
)
_CONDITION = _set("if unless whether when")
_AUXILIARIES = _set("is was has had does did will can 's")
#: What a name is defined as: "Kubernetes is used to…", "Rust is a kind of…". A name with a
#: role ("Omar is a dentist", "Ines is the tech lead for mobile") is a fact about someone,
#: not a definition.
NAME_DEFINED = re.compile(
    r"^\S+(?: \S+)? (?:is|are) (?:used|made|called|known|(?:a|an|one) (?:kind|type|part|form) of)"
    r"\b"
)
_DEFINITIONAL = re.compile(
    r"^(?:an? |the )?\S+(?: \S+)? (?:is|are) (?:a|an|used|made|called|known|one|part|kind|"
    r"type|the \w+ of)\b"
)
_INNER_NAME = re.compile(r"(?<=[\w,;:)] )[A-Z][\w-]*")
# Codes and identifiers: `quoted`, dotted/underscored names, capitals, letter-digit mixes,
# and numbers with a leading zero ("006", "0042"), which number things, never count them.
_CODE = re.compile(r"`[^`]+`|\w+[_./@]\w+|\b[A-Z]{2,}\b|\w*\d\w*[A-Za-z]\w*|[A-Za-z]+-\d|\b0\d+\b")


SMALL_TALK = _set(
    """
    hello hi hey hiya howdy greetings morning evening afternoon night bye goodbye cheers
    thanks thank ty please welcome ok okay k kk yes yeah yep yup no nope sure alright
    right cool great nice good fine awesome perfect sounds sound lol haha hmm um uh oh
    ah wow gotcha noted understood agreed np sorry
    """
)
# Greeting, thanking, laughing, groaning: the turn is talk to the listener. A discourse
# filler ("oh", "um", "hmm") is not here: "oh, my daughter is allergic to peanuts".
CHATTER = _set(
    """
    hi hello hey hiya howdy thanks thank ty haha hehe lol lmao ugh yay omg wow yikes
    bye goodbye cheers
    """
)
# What opens a contraction rather than a possessive name ("it's", "let's" / "Priya's").
_CONTRACTED = FUNCTION_WORDS | {"let"}
# An interjection opens a sentence capitalised and followed by a comma, like a name in
# apposition ("Ugh, …", "Sorry, …" against "Mateo, …").
_NOT_NAMES = _INDEFINITE | TRANSIENT | _EVALUATIVE | SMALL_TALK | CHATTER | _set("user earlier")


def is_question(text: str) -> bool:
    words = tokens(text)
    return text.rstrip().endswith("?") or bool(
        words
        and words[0] in _QUESTION_OPENERS
        and len(words) > 1
        and words[1] in _set("you i we it there they he she the this that your my")
        and not text.rstrip().endswith(".")
    )


def is_request(text: str) -> bool:
    words = tokens(text)
    return bool(words) and (
        words[0] in _REQUEST_OPENERS
        or (len(words) > 1 and words[:2] in (["can", "you"], ["could", "you"]))
    )


def possessive(word: str) -> bool:
    """A name's or a noun's "'s" ("Priya's", "the app's"): one particular thing. A
    contraction ("that's", "it's", "you're", "don't", "let's") points at nothing."""
    base, _, rest = word.partition("'")
    return rest == "s" and base not in FUNCTION_WORDS and base != "let"


def _indefinite(words: list[str]) -> list[str]:
    """The words of ``words`` that point at nothing in particular."""
    return [
        w for i, w in enumerate(words)
        if w in _INDEFINITE and (w not in _AMOUNT_NOUNS or (i and words[i - 1] == "a"))
    ]  # fmt: skip


def _share(words: list[str], vocabulary: frozenset[str]) -> float:
    return sum(w in vocabulary for w in words) / len(words) if words else 0.0


@lru_cache(maxsize=16_384)
def admission_features(text: str) -> dict[str, float]:
    """Every admission feature of ``text`` by name (:data:`ADMISSION_FEATURES`)."""
    words = tokens(text)
    content = [w for w in words if w not in FUNCTION_WORDS and value_of(w) is None]
    names = [n for n in _INNER_NAME.findall(text) if n.lower() not in FUNCTION_WORDS]
    values = sum(value_of(w) is not None for w in words)
    codes = len(_CODE.findall(text))
    owned = any(possessive(w) for w in words)
    anchored = bool(names or values or codes or owned)
    first = words[0] if words else ""
    user_subject = " ".join(words[:2]) in ("the user", "user is", "user has") or first == "user"
    opener = text.split()[0] if text.split() else ""
    capitalised = opener[:1].isupper() and first not in FUNCTION_WORDS
    named = capitalised and _opens_with_a_name(first, words[1:3], text)
    bare = (
        first not in FUNCTION_WORDS
        and first.split("'")[0] not in _CONTRACTED
        and first not in _DETERMINERS
        and not named
        and not (value_of(first) is not None or user_subject)
    )
    personal = any(w in _PERSONAL for w in words)
    numbered = any(re.fullmatch(r"0\d+", w) for w in words)
    referent = _value_referent(words)
    vague = _indefinite(words)
    # A figure that says what it measures ("at 9:30", "$1,850 a month") is content, like a
    # word; a weekday or a month alone is not ("Monday comes after Sunday").
    figure = referent and any(c.isdigit() for c in text)
    return {
        # The speaker ("I", "we") and an identifier ("006") are referents, like a name.
        "content_words": min(len(content) + personal + numbered + figure, 2) / 2,
        "names": min(len(names), 3) / 3,
        "named_subject": float(named),
        "values": min(values, 3) / 3,
        "codes": min(codes, 3) / 3,
        "possessive": float(owned),
        "personal": float(personal),
        "user_subject": float(user_subject),
        "deictic": float(any(w in _DEICTIC for w in words)),
        "vague": _share(content, frozenset(vague)) + 0.5 * float(bool(vague)),
        "hedge": float(any(w in _HEDGES for w in words)),
        "meta": _meta(words),
        "transient": float(any(w in _MOMENT for w in words)),
        "passing_state": float(any(w in _PASSING_STATES for w in words)),
        "bare_subject": float(bare),
        "definitional": float(
            bool((NAME_DEFINED if named else _DEFINITIONAL).match(" ".join(words)))
        ),
        "evaluative": _share(content, _EVALUATIVE),
        "short_unanchored": float(
            len(content) <= 3 and not (anchored or named or personal or user_subject)
        ),
        "condition": float(any(w in _CONDITION for w in words)),
        "request": float(is_request(text)),
        "value_referent": referent,
        # "The logo colour ...", "Our cluster ...": a particular thing of this world.
        "definite_subject": float(first in ("the", "our", "my", "this") and not user_subject),
    }


def _opens_with_a_name(first: str, after: list[str], text: str) -> bool:
    """ "Omar is …", "Tom left …", "Farah now owns …", "Marcus hates …", "Mateo, …": a
    capitalised first word of proper-noun shape, followed by its verb (an auxiliary, a verb in
    -s or a past form, perhaps after an adverb) or an apposition. A word in -s is a plural
    ("Sellers agreed", "Cats are") unless its verb is singular ("Marcus hates", "Jess is")."""
    if len(first) < 3 or first in _NOT_NAMES or value_of(first) is not None:
        return False
    if "'" in first and first.split("'")[0] in _CONTRACTED:
        return False  # "It's", "That's", "She's", "Let's": a pronoun's contraction, no name
    if _COMMON_NOUN.search(first.split("'")[0]):
        return False
    if "," in text.split()[0] or "'" in first:
        return True
    verb = after[1] if len(after) > 1 and after[0] in ADVERBS else (after or [""])[0]
    singular = verb in _AUXILIARIES or (verb.endswith("s") and not verb.endswith("ss"))
    if first.endswith("s") and not singular:
        return False
    return singular or past_form(verb)


def _meta(words: list[str]) -> float:
    """Talk about the conversation: its nouns, or a participant's speech act ("the user
    asked", "I mentioned")."""
    subject = next((w for w in words[:3] if w not in _DETERMINERS), "")
    if subject in _CONVERSATION or (
        subject in _PARTICIPANTS and any(w in _SPEECH_ACTS for w in words)
    ):
        return 1.0
    return 0.5 if any(w in _CONVERSATION for w in words) else 0.0


def _value_referent(words: list[str]) -> float:
    """A value that says what it measures: a time, date or amount, or a number followed
    by the noun it counts ("1,200 subscribers"), not a bare "the number is 42"."""
    for i, word in enumerate(words):
        value = value_of(word)
        if value is None:
            continue
        if ":" in value or value[0] in "$€£¥" or value.endswith(("%", "th")) or word.isalpha():
            return 1.0
        nxt = words[i + 1] if i + 1 < len(words) else ""
        if nxt and nxt not in FUNCTION_WORDS and value_of(nxt) is None:
            return 1.0
    return 0.0
