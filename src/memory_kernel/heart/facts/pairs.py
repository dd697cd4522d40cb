"""Pure features of a pair of statements (older, newer) for the learned relation scorers:
how much of each side the other covers, whether the holders match, how the values and
identifiers compare, and the mood of each side. Built on :mod:`slots`; cheap (a few set
operations per pair), so every candidate of a ``learn`` can be scored.
"""

from __future__ import annotations

from memory_kernel.heart.facts.frames import FrameDiff, compare
from memory_kernel.heart.facts.normalise import stem
from memory_kernel.heart.facts.slots import Statement, stem_is_verb

__all__ = [
    "PAIR_FEATURES", "covered", "pair_features", "topic_anchor", "topic_shared",
    "typed_value_changed",
]  # fmt: skip

PAIR_FEATURES = (
    "cosine", "cover_old", "cover_new", "holder_cover", "holder_swap", "value_changed",
    "value_shared", "value_one_side", "identifier_mismatch", "name_swap", "question",
    "list_item", "irrealis_differs", "change_new", "time_swap", "personal_both",
    "frame_shared", "frame_entity", "frame_other", "frame_value", "topic_shared",
    "topic_anchor",
)  # fmt: skip


def _match(word: str, pool: frozenset[str]) -> bool:
    """Same stem, a derived form (deploy/deploys, night/nightly: the longer adds at most
    three letters to a stem of five or more), or a compound's last part (houseplant/plant)."""
    if word in pool:
        return True
    for other in pool:
        short, long_ = (word, other) if len(word) <= len(other) else (other, word)
        if len(short) < 5:
            continue
        if long_.startswith(short) and len(long_) - len(short) <= 3:
            return True
        if long_.endswith(short):
            return True
    return False


def covered(words: tuple[str, ...] | frozenset[str], pool: frozenset[str]) -> float:
    """Share of ``words`` (distinct) that ``pool`` has a match for; 1.0 when there are none."""
    distinct = set(words)
    if not distinct:
        return 1.0
    return sum(_match(w, pool) for w in distinct) / len(distinct)


# Words too common to show that two statements are about the same thing: time words and
# units belong to values, these adjectives qualify anything.
_GENERIC_TEXT = """
new old last first next other same big small good great main time day week month year
hour minut second today tonight now morning night weekend weekday everi thing lot way
user peopl someon
"""
_GENERIC = frozenset(_GENERIC_TEXT.split())


def topic_shared(old: Statement, new: Statement) -> int:
    """Content words (not generic ones), names and identifiers the two statements share,
    plus one for a typed value (a time, an amount, a date) replaced by one of its type:
    without any, they are not about the same thing, whatever their cosine says."""
    pool = frozenset(w for w in new.content if w not in _GENERIC)
    words = sum(_match(w, pool) for w in set(old.content) if w not in _GENERIC and w != "i")
    retyped = typed_value_changed(old, new)
    return words + len(old.names & new.names) + len(old.identifiers & new.identifiers) + retyped


def typed_value_changed(old: Statement, new: Statement) -> bool:
    """A value with a type beyond a bare number (an amount, a time, a date, a frequency...)
    replaced by another of its type."""
    kinds = {k for k in old.value_types() & new.value_types() if k != "number"}
    return any(
        {v for k, v in old.values if k == kind} != {v for k, v in new.values if k == kind}
        for kind in kinds
    )


def topic_anchor(old: Statement, new: Statement) -> int:
    """What ties ``new`` to what ``old`` is about: the names and identifiers they share,
    the words of ``old``'s holder (what its sentence is about, "the spare key", "Dad's PT")
    found in ``new`` (for a first-person statement, "I do yoga twice a week", the nouns after
    its verb), and, when both speak of the speaker, a typed value replaced by another of its
    type. A shared verb or a word of another role ties nothing: two facts of one person
    about different things share the person."""
    ties = {stem(n) for n in old.names & new.names} | (old.identifiers & new.identifiers)
    holder = {w for w in old.holder if w != "i" and w not in _GENERIC}
    if not holder:
        holder = {w for w in old.predicate if w not in _GENERIC and not stem_is_verb(w)}
    pool = frozenset(w for w in new.content if w not in _GENERIC) | new.names
    ties |= {w for w in holder if _match(w, pool)}
    own_value = old.personal and new.personal and typed_value_changed(old, new)
    return len(ties) + int(own_value)


def _unmatched(words: tuple[str, ...], pool: frozenset[str]) -> int:
    return sum(not _match(w, pool) for w in set(words) if w != "i")


def _value_relation(old: Statement, new: Statement) -> tuple[float, float, float]:
    """(a type on both sides with another value, a value on both sides, values on one side
    only)."""
    shared = float(bool(old.values & new.values))
    changed = 0.0
    for kind in old.value_types() & new.value_types():
        mine = {v for k, v in old.values if k == kind}
        theirs = {v for k, v in new.values if k == kind}
        if not mine <= theirs:
            changed = 1.0
    one_side = float(bool(old.values) != bool(new.values))
    return changed, shared, one_side


def _identifier_mismatch(old: Statement, new: Statement) -> float:
    """Identifiers of one side that the other side does not name: a different thing."""
    keys_old = old.identifiers | {v for _, v in old.values}
    keys_new = new.identifiers | {v for _, v in new.values}
    gone, came = old.identifiers - keys_new, new.identifiers - keys_old
    if gone and came:
        return 1.0
    return 0.5 if gone or came else 0.0


def pair_features(
    old: Statement, new: Statement, cosine: float, diff: FrameDiff | None = None
) -> dict[str, float]:
    """Every pair feature by name (:data:`PAIR_FEATURES`); a scorer picks the ones it was
    trained on."""
    old_pool, new_pool = old.content, new.content
    changed, shared, one_side = _value_relation(old, new)
    holder_swap = float(
        _unmatched(old.holder, new_pool) > 0 and _unmatched(new.holder, old_pool) > 0
    )
    names_gone, names_came = old.names - new.names, new.names - old.names
    times_gone, times_came = old.time_words - new.time_words, new.time_words - old.time_words
    diff = diff or compare(old, new)
    return {
        "cosine": cosine,
        "cover_old": covered(old.content, new_pool),
        "cover_new": covered(new.content, old_pool),
        "holder_cover": covered(old.holder, new_pool),
        "holder_swap": holder_swap,
        "value_changed": changed,
        "value_shared": shared,
        "value_one_side": one_side,
        "identifier_mismatch": _identifier_mismatch(old, new),
        "name_swap": float(bool(names_gone) and bool(names_came)),
        "question": float(old.question or new.question),
        "list_item": float(old.list_item or new.list_item or bool(old.listed | new.listed)),
        "irrealis_differs": float(old.irrealis != new.irrealis),
        "change_new": float(new.change),
        "time_swap": float(bool(times_gone) and bool(times_came)),
        "personal_both": float(old.personal and new.personal),
        "frame_shared": diff.shared,
        "frame_entity": float(min(diff.entity, 2)) / 2,
        "frame_other": float(min(diff.other, 3)) / 3,
        "frame_value": float(min(diff.value, 2)) / 2,
        "topic_shared": min(topic_shared(old, new), 4) / 4,
        "topic_anchor": min(topic_anchor(old, new), 3) / 3,
    }
