"""Pure read-time view of a query: which slot it asks about, and how a pair of recalled
facts answers it.

At write time a newer fact retires an older one only when the rules or the update scorer
are sure; two facts whose words barely meet ("Pickup is at 3:10" / "I'm collecting Maya at
2:50 now") stay current side by side. At read time there is one more piece of evidence:
the query both were recalled for. A question names its slot twice over: by its words
("pickup") and by the kind of value it asks for ("what time" asks for a time, "how many"
for a count, "who" for a name). Two recalled facts that both answer the query with a value
of the asked kind are two values of one slot far more often than two facts that merely
share words; the read scorer (``weights/read.json``) weighs that with the pair features.

The asked kinds come from the closed class of English question words, not from data.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from memory_kernel.heart.facts.normalise import stem
from memory_kernel.heart.facts.pairs import covered
from memory_kernel.heart.facts.slots import GENERIC, Statement, statement
from memory_kernel.heart.facts.values import PERIOD_KINDS

__all__ = [
    "QUERY_FEATURES", "READ_FEATURES", "READ_PAIR_FEATURES", "STATE", "Query", "answers",
    "no_asked_value", "query_features", "query_view", "states_of_one_item",
]  # fmt: skip

QUERY_FEATURES = (
    "q_cover_old", "q_cover_new", "q_answer_old", "q_answer_new", "q_answer_both",
    "q_cos_old", "q_cos_new", "q_state",
)  # fmt: skip
#: The pair features the read scorer weighs: how close and how tied the two are, whether a
#: typed value changed or the newer one announces a change (``announced_new``: the
#: constructions of ``change.announces_change``, not the slot view's looser bag of change
#: words, which fires on look-alikes: "The new laptop has a 1 TB SSD"), and what sets them
#: apart (another name, another holder or attribute in a shared frame). Fewer than the
#: write-time scorer's: the read scorer learns from about sixty updates, and with every pair
#: feature it learned the rows (cross-validated recall far below the development figure).
#: The moods (question, list item, goal) are left to the rules, which decide those pairs
#: before it.
READ_PAIR_FEATURES = (
    "cosine", "cover_old", "cover_new", "holder_cover", "value_changed", "announced_new",
    "name_swap", "frame_entity", "frame_other", "topic_shared", "topic_anchor",
)  # fmt: skip
#: The read scorer's features: the pair's, then the query's.
READ_FEATURES = READ_PAIR_FEATURES + QUERY_FEATURES

# The kinds of value a question word asks for (``Statement.values`` types, plus "name" for
# a capitalised name and "identifier" for a code or cited number). First match wins.
_NUMERIC = frozenset({"number", "money", "measure", "percent"})
#: The kind a question about a state asks for: any statement about its subject answers it.
STATE = "state"
_STATUS = re.compile(r"\b(status|state|progress)\b")
_WHEN = PERIOD_KINDS | {"time"}
_ASKED: tuple[tuple[re.Pattern[str], frozenset[str]], ...] = tuple(
    (re.compile(pattern), kinds)
    for pattern, kinds in (
        (r"\bhow (many|much)\b", _NUMERIC | {"frequency"}),
        (r"\bhow (long|old)\b", frozenset({"duration", "measure", "number", "time"})),
        (r"\bhow (often|frequently)\b", frozenset({"frequency", "day"})),
        (r"\bhow (big|far|fast|heavy|tall|large|high)\b", _NUMERIC),
        (r"\b(what|which) (time|hour)\b", frozenset({"time"})),
        (r"\b(what|which) (day|days|date)\b", frozenset({"day", "date"})),
        (r"\b(what|which) (year|month)\b", frozenset({"year", "date"})),
        (r"\b(what|which) (\w+ )?(version|release)\b", frozenset({"number", "identifier"})),
        (r"\bwhen\b", _WHEN),
        (r"\b(who|whom|whose|where)\b", frozenset({"name"})),
        (
            r"\b(what|which) (is|are|was|were|does|do|did) (the |my |our |your )?(\w+ ){0,2}"
            r"(price|cost|rate|limit|size|count|number|amount|total|score|budget|target|"
            r"salary|rent|weight|dose|fee|balance)\b",
            _NUMERIC,
        ),
        # A state: "what is the status of X", or a yes/no question ("is X still flaky",
        # "can I run yet"): whatever the statements about X say of it.
        (_STATUS.pattern, frozenset({STATE})),
        (r"^(is|are|was|were|can|could|does|do|did|has|have|will)\b", frozenset({STATE})),
        (r"\b(what|which)\b", frozenset({"name", "identifier"})),
    )
)
# Auxiliaries and light verbs a question is built with, and words too common to name a
# slot (as stems, the form statements keep their words in).
_LIGHT = (
    frozenset(
        stem(w)
        for w in (
            "is",
            "are",
            "was",
            "were",
            "be",
            "do",
            "does",
            "did",
            "have",
            "has",
            "had",
            "get",
        )
    )
    | GENERIC
    | frozenset(stem(w) for w in GENERIC)
)
_QUESTION_WORDS = frozenset(
    [
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "when",
        "where",
        "why",
        "how",
        "many",
        "much",
        "long",
        "often",
        "old",
    ]
)


@dataclass(frozen=True, slots=True)
class Query:
    """The slot a query asks about: its content words, the identifiers it names ("the
    status of 006"), the periods it is pinned to ("in June": ``("date", "june")``) and the
    kinds of value it asks for."""

    text: str
    content: frozenset[str]
    asked: frozenset[str]
    identifiers: frozenset[str]
    periods: frozenset[tuple[str, str]]


# A turn's recall reads its query's view once per node; queries may be 1 MiB messages, so
# only the last few are kept.
@lru_cache(maxsize=64)
def query_view(text: str) -> Query:
    lower = text.lower().strip()
    asked: frozenset[str] = frozenset()
    for pattern, kinds in _ASKED:
        if pattern.search(lower):
            asked = kinds
            break
    parsed = statement(text)
    # The verbs stay ("which day do we deploy"): a question's verb often names the slot.
    content = frozenset(
        w for w in parsed.content | frozenset(parsed.names)
        if w not in _QUESTION_WORDS and w not in _LIGHT and w != "i"
    )  # fmt: skip
    periods = frozenset(v for v in parsed.values if v[0] in PERIOD_KINDS)
    return Query(text, content, asked, parsed.identifiers, periods)


def _kinds(s: Statement) -> frozenset[str]:
    kinds = set(s.value_types)
    if s.identifiers:
        kinds.add("identifier")
    if s.names:
        kinds.add("name")
    return frozenset(kinds)


def answers(query: Query, s: Statement) -> bool:
    """``s`` carries a value of a kind ``query`` asks for (for a state: ``s`` speaks of
    one of the query's words or identifiers)."""
    if STATE in query.asked:
        if query.identifiers & s.identifiers:
            return True
        return bool(query.content) and covered(query.content, s.topic_pool) > 0
    return bool(query.asked & _kinds(s))


#: Days as people write them short ("switched to weds", "demos -> fri") and times of day
#: the slot view gives no value ("at noon now"), read as a time only where a question about
#: a day or a time is asked (:func:`_may_give`).
_WHEN_WORDS = frozenset(
    {"mon", "tue", "tues", "wed", "weds", "thu", "thur", "thurs", "fri", "sat", "sun", "noon",
     "midnight"}
)  # fmt: skip


def _may_give(asked: frozenset[str], s: Statement) -> bool:
    """Whether ``s`` may give a value of the kind ``asked``, read loosely: any digit (the
    slot view reads "2,000" as a year and "a 50-minute ride" as a kind of ride); for an
    amount or a count, a number in words too; for a day or a time, a period, a time, a
    number, a word of time ("next week", "tomorrow", "tonight") or a day written short."""
    if any(c.isdigit() for c in s.text):
        return True
    kinds: set[str] = set()
    if asked & _NUMERIC:
        kinds |= _NUMERIC | {"frequency", "duration", "year"}
    if asked & _WHEN:
        kinds |= _WHEN | {"number", "duration"}
    if kinds & s.value_types:
        return True
    if not asked & _WHEN:
        return False
    return bool(s.time_words) or not _WHEN_WORDS.isdisjoint(re.findall(r"[a-z]+", s.text.lower()))


def no_asked_value(query: Query, old: Statement, new: Statement) -> bool:
    """``query`` asks for an amount, a count, a day or a time; ``old`` gives one and
    ``new`` gives nothing that may be one (:func:`_may_give`): whatever ``new`` announces,
    it gives no new value of what is asked ("How many regular members does the book club
    have": "The book club has 9 regular members" / "Library room kept getting
    double-booked, so book club meets at the café now"). Not where the query asks for an
    identifier ("which version": "v3"), a name or a state, which change without a number."""
    if "identifier" in query.asked or not query.asked & (_NUMERIC | _WHEN):
        return False
    return answers(query, old) and not _may_give(query.asked, new)


def states_of_one_item(query: Query, old: Statement, new: Statement) -> bool:
    """``query`` asks for the state of one item, and ``old`` and ``new`` both name that item
    and no other: two states of one item, the newer is how it is now.

    The item is what the query numbers ("what's the status of ticket 4411": "Ticket 4411:
    blocked on vendor API keys" / "Ticket 4411: in review"; "006 status: PLANNED" / "006
    shipped"), or, when it numbers nothing and asks for a status in words, the query's words
    that both statements hold, the same ones in each ("what's the status of my visa":
    "visa application submitted" / "visa approved!!"). A yes/no question's words may also
    be the value it asks about, which only the newer may hold ("is the passport renewal
    done": "Passport renewal is still processing" / "Passport showed up, so the renewal's
    done"): the newer holds every query word the older holds ("is Hannah allergic to
    nuts": "Hannah is allergic to nuts" / "Hannah is allergic to shellfish" is no such
    pair). Found on W (read); sealed KU sets, newest first · stale presented · look-alikes
    dated at read, of 150: 116 · 45 · 24 → 118 · 43 · 24 (docs/tuning.md, eighteenth
    round)."""
    if STATE not in query.asked:
        return False
    if query.identifiers:
        return query.identifiers <= old.identifiers and old.identifiers == new.identifiers
    if not new.identifiers <= old.identifiers:
        return False
    held_old = frozenset(w for w in query.content if covered((w,), old.topic_pool))
    held_new = frozenset(w for w in query.content if covered((w,), new.topic_pool))
    if not _STATUS.search(query.text.lower()):
        return bool(held_old) and held_old <= held_new
    return bool(held_old) and held_old == held_new


def query_features(
    query: Query, old: Statement, new: Statement, cos_old: float, cos_new: float
) -> dict[str, float]:
    """How each of a pair of recalled facts answers ``query`` (:data:`QUERY_FEATURES`)."""
    answer_old, answer_new = answers(query, old), answers(query, new)
    return {
        "q_cover_old": covered(query.content, old.topic_pool) if query.content else 0.0,
        "q_cover_new": covered(query.content, new.topic_pool) if query.content else 0.0,
        "q_answer_old": float(answer_old),
        "q_answer_new": float(answer_new),
        "q_answer_both": float(answer_old and answer_new),
        "q_cos_old": cos_old,
        "q_cos_new": cos_new,
        # A question about a state that both speak of: the newer says how it is now.
        "q_state": float(STATE in query.asked and answer_old and answer_new),
    }
