"""Pure features of a pair of statements (older, newer) for the learned relation scorers:
how much of each side the other covers, whether the holders match, how the values and
identifiers compare, and the mood of each side. Built on :mod:`slots`; cheap (a few set
operations per pair), so every candidate of a ``learn`` can be scored.
"""

from __future__ import annotations

from collections.abc import Iterable

from memory_kernel.heart.facts.frames import FrameDiff, compare
from memory_kernel.heart.facts.normalise import stem
from memory_kernel.heart.facts.slots import GENERIC, Statement, stem_is_verb

__all__ = [
    "FRAME_FEATURES", "PAIR_FEATURES", "content_overlap", "covered", "frame_features",
    "named_alike", "pair_features", "text_features", "topic_anchor", "typed_value_changed",
    "word_ties",
]  # fmt: skip

PAIR_FEATURES = (
    "cosine", "cover_old", "cover_new", "holder_cover", "holder_swap", "value_changed",
    "value_shared", "value_one_side", "identifier_mismatch", "name_swap", "question",
    "list_item", "irrealis_differs", "change_new", "time_swap", "personal_both",
    "frame_shared", "frame_entity", "frame_other", "frame_value", "topic_shared",
    "topic_anchor",
)  # fmt: skip


def _match(word: str, pool: frozenset[str], affixes: frozenset[str] | None = None) -> bool:
    """Same stem, a derived form (deploy/deploys, night/nightly: the longer adds at most
    three letters to a stem of five or more), or a compound's last part (houseplant/plant).
    ``affixes``: the five-letter beginnings and ends of the pool's longer words
    (``Statement.affixes`` of its ``content``), which any match shares with ``word``.

    Not cached: a cache of (word, pool) pairs kept every pair a learn ever compared alive,
    and the garbage collector walked them all again and again."""
    if word in pool:
        return True
    if len(word) < 5:
        return False  # the shorter of the two words has five letters or more
    if affixes is not None and word[:5] + "-" not in affixes and "-" + word[-5:] not in affixes:
        return False
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


_GENERIC = GENERIC


def content_overlap(old: Statement, new: Statement) -> float:
    """Share of the smaller side's content words (verbs aside) found as such in the other:
    a cheap necessary condition of a restatement (every dev paraphrase the duplicate scorer
    merges shares a third or more)."""
    mine = {w for w in old.content if not stem_is_verb(w)}
    theirs = {w for w in new.content if not stem_is_verb(w)}
    smaller = min(len(mine), len(theirs))
    return len(mine & theirs) / smaller if smaller else 0.0


def _said(s: Statement, kind: str) -> set[str]:
    """The values of ``kind`` in ``s``; a time on a 12-hour dial, since "10:30" and
    "10:30pm" may be one reading said with and without its half of the day."""
    return {_on_dial(v) if kind == "time" else v for k, v in s.values if k == kind}


def _on_dial(time: str) -> str:
    hour, _, rest = time.partition(":")
    return f"{int(hour) % 12}:{rest}" if hour.isdigit() else time


def typed_value_changed(old: Statement, new: Statement) -> bool:
    """A value with a type beyond a bare number (an amount, a time, a date, a frequency...)
    replaced by another of its type."""
    kinds = {k for k in old.value_types & new.value_types if k != "number"}
    return any(_said(old, kind) != _said(new, kind) for kind in kinds)


def _opening_name(s: Statement) -> frozenset[str]:
    """The first word when it is capitalised: a name or the capital every sentence opens
    with, which the other statement's names tell apart ("Dana left" / "… is Dana")."""
    if s.items and s.items[0][0] in ("h", "p") and s.items[0][2][:1].isupper():
        return frozenset({s.items[0][2].lower().split("'")[0]})
    return frozenset()


def shared_names(old: Statement, new: Statement) -> frozenset[str]:
    """Names both statements give, a sentence's opening word counted as a name where the
    other statement gives it as one."""
    return (
        (old.names & new.names)
        | (old.names & _opening_name(new))
        | (_opening_name(old) & new.names)
    )


def _named_both(old: Statement, new: Statement) -> set[str]:
    """The names (stemmed) and identifiers both statements give."""
    return {stem(n) for n in shared_names(old, new)} | (old.identifiers & new.identifiers)


def named_alike(old: Statement, new: Statement) -> bool:
    """Both statements name one thing: a name or an identifier in common."""
    return bool(_named_both(old, new))


def word_ties(old: Statement, new: Statement) -> int:
    """What ties ``new`` to what ``old`` is about by their words: the names and identifiers
    they share, and the words of ``old``'s holder (what its sentence is about, "the spare
    key", "Dad's PT") found in ``new`` (for a first-person statement, "I do yoga twice a
    week", the nouns after its verb). A shared verb or a word of another role ties nothing:
    two facts of one person about different things share the person."""
    ties = _named_both(old, new)
    holder = {w for w in old.holder if w != "i" and w not in _GENERIC}
    if not holder:
        holder = {w for w in old.predicate if w not in _GENERIC and not stem_is_verb(w)}
    ties |= {w for w in holder if _match(w, new.topic_pool)}
    return len(ties)


def topic_anchor(old: Statement, new: Statement) -> int:
    """:func:`word_ties`, and one more when both speak of the speaker and a typed value was
    replaced by another of its type."""
    own_value = old.personal and new.personal and typed_value_changed(old, new)
    return word_ties(old, new) + int(own_value)


def _value_relation(old: Statement, new: Statement) -> tuple[float, float, float]:
    """(a type on both sides with another value, a value on both sides, values on one side
    only)."""
    shared = float(bool(old.values & new.values))
    changed = 0.0
    for kind in old.value_types & new.value_types:
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


#: The features read from the alignment of the two statements, each between 0 and 1.
FRAME_FEATURES = ("frame_shared", "frame_entity", "frame_other", "frame_value")


def pair_features(
    old: Statement,
    new: Statement,
    cosine: float,
    diff: FrameDiff | None = None,
    *,
    anchor: int | None = None,
) -> dict[str, float]:
    """Every pair feature by name (:data:`PAIR_FEATURES`); a scorer picks the ones it was
    trained on."""
    return text_features(old, new, cosine, anchor=anchor) | frame_features(
        diff or compare(old, new)
    )


def frame_features(diff: FrameDiff) -> dict[str, float]:
    """The :data:`FRAME_FEATURES` of an alignment."""
    return {
        "frame_shared": diff.shared,
        "frame_entity": float(min(diff.entity, 2)) / 2,
        "frame_other": float(min(diff.other, 3)) / 3,
        "frame_value": float(min(diff.value, 2)) / 2,
    }


def text_features(
    old: Statement, new: Statement, cosine: float, *, anchor: int | None = None
) -> dict[str, float]:
    """The pair features but the :data:`FRAME_FEATURES`: what the two statements' slot
    views tell without aligning them."""
    # Each word of a side matched against the other side once; every share below reads it.
    in_new = {w: _match(w, new.content, new.affixes) for w in old.content}
    in_old = {w: _match(w, old.content, old.affixes) for w in new.content}

    def share(words: Iterable[str], matched: dict[str, bool]) -> float:
        distinct = set(words)
        return sum(matched[w] for w in distinct) / len(distinct) if distinct else 1.0

    def unmatched(words: Iterable[str], matched: dict[str, bool]) -> int:
        return sum(not matched[w] for w in set(words) if w != "i")

    changed, shared, one_side = _value_relation(old, new)
    holder_swap = unmatched(old.holder, in_new) > 0 and unmatched(new.holder, in_old) > 0
    names_gone, names_came = old.names - new.names, new.names - old.names
    times_gone, times_came = old.time_words - new.time_words, new.time_words - old.time_words
    topical = sum(in_new[w] for w in old.content if w not in _GENERIC and w != "i")
    topical += len(old.names & new.names) + len(old.identifiers & new.identifiers)
    topical += typed_value_changed(old, new)
    return {
        "cosine": cosine,
        "cover_old": share(old.content, in_new),
        "cover_new": share(new.content, in_old),
        "holder_cover": share(old.holder, in_new),
        "holder_swap": float(holder_swap),
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
        "topic_shared": min(topical, 4) / 4,
        "topic_anchor": min(topic_anchor(old, new) if anchor is None else anchor, 3) / 3,
    }
