"""Pure pair classification: is a new fact a duplicate of an old one, an update of the same
slot with a new value, a contradiction, or unrelated?

The rules are deterministic and need no LLM. They look at the cosine of the two embeddings
and at the words: values (numbers, amounts, times, dates), opposite meanings, the aligned
"frame" of the two sentences, the head (who/what the sentence is about) and change markers
("now", "anymore", "moved", "switched"). The order of the checks is the policy: a flipped
meaning or a changed value is never a duplicate.
"""

from __future__ import annotations

from dataclasses import dataclass
from difflib import SequenceMatcher
from enum import StrEnum

from memory_kernel.heart.facts.normalise import TextFeatures, same_stem
from memory_kernel.heart.facts.polarity import flip_reason

__all__ = ["PairRelation", "PairVerdict", "RelationThresholds", "classify_pair"]

# Words that announce that a statement replaces an earlier one.
_CHANGE_MARKERS = frozenset(
    {"now", "anymore", "longer", "switched", "changed", "again", "nowadays", "moved",
     "became", "become", "still", "previously", "formerly"}
)  # fmt: skip


# Words outside the shared frame (both sides together) for a "same frame, new value" change.
_MAX_SUBSTITUTED_WORDS = 4


class PairRelation(StrEnum):
    DUPLICATE = "duplicate"
    UPDATE = "update"
    CONTRADICTION = "contradiction"
    UNRELATED = "unrelated"


@dataclass(frozen=True, slots=True)
class RelationThresholds:
    """Cosine and word-overlap cut-offs (defaults live in ``HeartConfig``)."""

    dedup_similarity: float
    dedup_coverage: float
    dedup_max_novel: int
    update_similarity: float
    update_floor: float
    update_shared: float
    contradiction_similarity: float


@dataclass(frozen=True, slots=True)
class PairVerdict:
    relation: PairRelation
    reason: str
    similarity: float


def _shared(a: tuple[str, ...], b: tuple[str, ...]) -> int:
    """How many distinct content stems of ``a`` have a match in ``b`` (see ``same_stem``).

    Exact matches by set intersection; only the rest is compared by prefix, through a
    5-character index, so the learn path stays linear in the words."""
    mine, pool = set(a), set(b)
    exact = mine & pool
    rest = mine - exact
    if not rest:
        return len(exact)
    index: dict[str, list[str]] = {}
    for other in pool - exact:
        if len(other) >= 5:
            index.setdefault(other[:5], []).append(other)
    fuzzy = sum(
        1
        for word in rest
        if len(word) >= 5 and any(same_stem(word, o) for o in index.get(word[:5], ()))
    )
    return len(exact) + fuzzy


def _unique_both_sides(a: TextFeatures, b: TextFeatures) -> bool:
    return _shared(a.content, b.content) < len(set(a.content)) and _shared(
        b.content, a.content
    ) < len(set(b.content))


def _substitution(a: TextFeatures, b: TextFeatures) -> str | None:
    """The two sentences share a frame and differ in one aligned span with content on both
    sides: "owned by the billing team" / "owned by the platform team"."""
    matcher = SequenceMatcher(a=a.content, b=b.content, autojunk=False)
    equal = sum(block.size for block in matcher.get_matching_blocks())
    shorter = min(len(a.content), len(b.content))
    unmatched = len(a.content) + len(b.content) - 2 * equal
    # A swapped slot leaves the rest of the sentence intact; more rewording than a few
    # words is a paraphrase or a different statement, not a slot change.
    if shorter == 0 or equal / shorter < 0.5 or unmatched > _MAX_SUBSTITUTED_WORDS:
        return None
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "replace" and not _shared(a.content[i1:i2], b.content[j1:j2]):
            old, new = " ".join(a.content[i1:i2]), " ".join(b.content[j1:j2])
            return f"same frame, {old!r} became {new!r}"
    return None


def _same_slot(a: TextFeatures, b: TextFeatures, t: RelationThresholds) -> bool:
    """Same head (who/what it is about) and enough shared words besides the head to be the
    same attribute: the low-similarity side of a knowledge update ("Rachel moved to Chicago"
    / "Rachel moved back to the suburbs")."""
    if not a.head or a.head != b.head:
        return False
    head_words = set(a.head.split(":"))
    rest_a = tuple(w for w in a.content if w not in head_words)
    rest_b = tuple(w for w in b.content if w not in head_words)
    larger = max(len(set(rest_a)), len(set(rest_b)))
    shared = min(_shared(rest_a, rest_b), _shared(rest_b, rest_a))
    return larger > 0 and shared >= 1 and shared / larger >= t.update_shared


def _has_change_marker(a: TextFeatures, b: TextFeatures) -> bool:
    return bool(_CHANGE_MARKERS.intersection(a.words) or _CHANGE_MARKERS.intersection(b.words))


def _values_changed(old: TextFeatures, new: TextFeatures) -> str:
    gone = ", ".join(sorted(old.values - new.values)) or "-"
    came = ", ".join(sorted(new.values - old.values)) or "-"
    return f"value changed: {gone} -> {came}"


def classify_pair(
    old: TextFeatures, new: TextFeatures, similarity: float, t: RelationThresholds
) -> PairVerdict:
    """How ``new`` relates to ``old`` (``similarity`` is the cosine of their embeddings)."""

    def verdict(relation: PairRelation, reason: str) -> PairVerdict:
        return PairVerdict(relation=relation, reason=reason, similarity=similarity)

    if old.words == new.words:
        return verdict(PairRelation.DUPLICATE, "same text")
    if similarity < min(t.update_floor, t.dedup_similarity):
        return verdict(PairRelation.UNRELATED, "not similar")
    flip = flip_reason(old, new)
    if flip is not None:
        if similarity >= t.contradiction_similarity:
            return verdict(PairRelation.CONTRADICTION, flip)
        return verdict(PairRelation.UNRELATED, f"not similar enough to contradict ({flip})")
    if old.values != new.values:
        # A value replaced by another is an update; a value only added or dropped is new
        # detail, which is neither the same fact nor a reason to retire the old one.
        replaced = bool(old.values - new.values) and bool(new.values - old.values)
        if replaced and (similarity >= t.update_similarity or _same_slot(old, new, t)):
            return verdict(PairRelation.UPDATE, _values_changed(old, new))
        return verdict(PairRelation.UNRELATED, "different values")
    if similarity >= t.update_similarity:
        substitution = _substitution(old, new)
        if substitution is not None:
            return verdict(PairRelation.UPDATE, substitution)
    if _has_change_marker(old, new) and _same_slot(old, new, t) and _unique_both_sides(old, new):
        return verdict(PairRelation.UPDATE, "same head, new value, change marker")
    if similarity < t.dedup_similarity:
        return verdict(PairRelation.UNRELATED, "different content")
    old_words, new_words = set(old.content), set(new.content)
    old_shared, new_shared = _shared(old.content, new.content), _shared(new.content, old.content)
    larger = max(len(old_words), len(new_words))
    share = min(old_shared, new_shared) / larger if larger else 1.0
    novel = max(len(old_words) - old_shared, len(new_words) - new_shared)
    if share >= t.dedup_coverage and novel <= t.dedup_max_novel:
        return verdict(PairRelation.DUPLICATE, f"paraphrase (word coverage {share:.2f})")
    return verdict(PairRelation.UNRELATED, "different content")
