"""Pure pair classification: is a new fact a duplicate of an old one, an update of the same
slot with a new value, a contradiction, or unrelated?

No LLM. The order of the checks is the policy (precision first: when unsure that the new
fact replaces the old one, both stay current and recall orders them, newest first):

1. the same words: a duplicate; too dissimilar: unrelated;
2. a flipped meaning (negation, antonym, swapped comparison): a contradiction;
3. vetoes, from the slot view (``slots``): a question, a list item ("another", "too",
   "include"), a goal / plan / hearsay on one side only, or a different identifier
   ("Article 25" / "Article 37") is never an update;
4. two statements in parallel (``frames``): only a changed value, nothing else, is an
   update; no difference at all (``reading``: nor in time, scope, list, roles or mood) is
   a duplicate; another holder, attribute or scope is neither; a change marker ("now",
   "switched") with the same holder is an update;
5. otherwise the duplicate scorer (``scorer``: logistic regression over the pair features
   of ``pairs``) merges above its threshold, unless the update scorer rates the pair
   likelier a new value. No scorer retires a fact (:func:`classify_pair`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

from memory_kernel.heart.facts.arithmetic import recounted
from memory_kernel.heart.facts.change import announces_change_from
from memory_kernel.heart.facts.frames import FrameDiff, abbreviates, compare, may_be_parallel
from memory_kernel.heart.facts.normalise import TextFeatures, same_stem, tokens
from memory_kernel.heart.facts.pairs import (
    FRAME_FEATURES,
    PAIR_FEATURES,
    content_overlap,
    frame_features,
    pair_features,
    text_features,
    topic_anchor,
)
from memory_kernel.heart.facts.polarity import flip_reason
from memory_kernel.heart.facts.reading import same_reading
from memory_kernel.heart.facts.scorer import LinearScorer, packaged
from memory_kernel.heart.facts.slots import Statement, statement
from memory_kernel.heart.facts.values import PERIOD_KINDS

if TYPE_CHECKING:
    from memory_kernel.config import HeartConfig

__all__ = [
    "CHANGE_MARKERS", "PairRelation", "PairVerdict", "RelationThresholds", "classify_pair",
    "default_scorers", "may_be_duplicate", "reworded", "ruled_update", "scored_stage",
    "update_probability", "veto",
]  # fmt: skip

# Words that announce that a statement replaces an earlier one.
CHANGE_MARKERS = frozenset(
    {"now", "anymore", "longer", "switched", "changed", "again", "nowadays", "moved",
     "became", "become", "still", "previously", "formerly"}
)  # fmt: skip


#: The least content overlap of a restatement (``pairs.content_overlap``).
_RESTATED_OVERLAP = 0.3


class PairRelation(StrEnum):
    DUPLICATE = "duplicate"
    UPDATE = "update"
    CONTRADICTION = "contradiction"
    UNRELATED = "unrelated"


def default_scorers() -> tuple[LinearScorer, LinearScorer]:
    """The packaged (update, duplicate) scorers."""
    return packaged("update", PAIR_FEATURES), packaged("duplicate", PAIR_FEATURES)


@dataclass(frozen=True, slots=True)
class RelationThresholds:
    """Cosine and word-overlap cut-offs (defaults live in ``HeartConfig``) and the learned
    scorers with their thresholds (packaged unless the configuration names others)."""

    dedup_similarity: float
    dedup_coverage: float
    dedup_max_novel: int
    update_similarity: float
    update_floor: float
    update_shared: float
    contradiction_similarity: float
    update_scorer: LinearScorer = field(default_factory=lambda: default_scorers()[0])
    duplicate_scorer: LinearScorer = field(default_factory=lambda: default_scorers()[1])

    @classmethod
    def from_config(cls, cfg: HeartConfig, **scorers: LinearScorer) -> RelationThresholds:
        """The cut-offs ``cfg`` sets, with ``scorers`` (``update_scorer``,
        ``duplicate_scorer``) replacing the packaged ones."""
        return cls(
            dedup_similarity=cfg.fact_dedup_similarity,
            dedup_coverage=cfg.fact_dedup_coverage,
            dedup_max_novel=cfg.fact_dedup_max_novel_words,
            update_similarity=cfg.fact_update_similarity,
            update_floor=cfg.fact_update_floor,
            update_shared=cfg.fact_update_shared,
            contradiction_similarity=cfg.fact_contradiction_similarity,
            **scorers,
        )


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
    return bool(CHANGE_MARKERS.intersection(a.words) or CHANGE_MARKERS.intersection(b.words))


def _values_changed(old: TextFeatures, new: TextFeatures) -> str:
    gone = ", ".join(sorted(old.values - new.values)) or "-"
    came = ", ".join(sorted(new.values - old.values)) or "-"
    return f"value changed: {gone} -> {came}"


# Kinds of value that measure how much (``values.PERIOD_KINDS`` name when).
_QUANTITIES = frozenset({"money", "measure", "percent", "duration", "amount"})


def _another_period(old: TextFeatures, new: TextFeatures) -> bool:
    """Both a period and a quantity changed: "in January we spent $640" / "in February we
    spent $710" is a series, two values of two periods, unless the newer announces that the
    value changed ("… $1,300 as of March")."""
    changed = {kind for kind, _ in statement(old.text).values ^ statement(new.text).values}
    return (
        bool(changed & PERIOD_KINDS)
        and bool(changed & _QUANTITIES)
        and not announces_change_from(old.text, new.text)
    )


def veto(old: Statement, new: Statement) -> str | None:
    """Why ``new`` cannot be an update of ``old``, whatever else they share."""
    if old.question or new.question:
        return "a question is not an update"
    if new.list_item or (new.listed & (old.content | old.listed) and not recounted(old, new)):
        return "a list item adds, it does not replace"
    if old.irrealis != new.irrealis:
        return "a goal, plan or report beside a statement"
    if _identifiers_contrast(old, new):
        return "different identifiers"
    return None


def _scored(scorer: LinearScorer, features: dict[str, float]) -> float:
    return scorer.probability([features[name] for name in scorer.features])


def update_probability(
    old: TextFeatures, new: TextFeatures, similarity: float, t: RelationThresholds
) -> float:
    """How likely ``new`` gives a new value of ``old``'s slot, without a query: 1 or 0
    where the rules are sure (a veto, a parallel pair), else the update scorer's
    probability (which retires nothing: ``classify_pair``). Recall decides with the query
    (``read_resolution``); this is the write-time view of a pair, for inspection and the
    pair digests."""
    ruled = ruled_update(old, new, t)
    if ruled is not None:
        return ruled
    s_old, s_new = statement(old.text), statement(new.text)
    if topic_anchor(s_old, s_new) == 0:
        return 0.0
    diff = compare(s_old, s_new)
    return _scored(t.update_scorer, pair_features(s_old, s_new, similarity, diff))


def ruled_update(old: TextFeatures, new: TextFeatures, t: RelationThresholds) -> float | None:
    """1 or 0 where the rules are sure that ``new`` does or does not give a new value of
    ``old``'s slot (a veto, a pair written in parallel); ``None``: a scorer must decide.

    In parallel, only a changed value is sure to be an update, and only a restatement or
    another holder or identifier sure not to be — unless the newer fact announces the
    change, where what was swapped may be the value itself ("Changed the VPN passphrase to
    heron81"): the read scorer weighs that pair. So it does a pair with other words changed
    besides ("pinned to Python 3.10" / "bumped … to python 3.12 tonight"; "comes on
    Tuesdays" / "oh … comes Fridays now"): half restated, half another wording. Blind
    probes (session 16), newest first · stale presented, of 30: C 22 · 14 → 25 · 11,
    sealed D 17 · 17 → 21 · 13."""
    s_old, s_new = statement(old.text), statement(new.text)
    if veto(s_old, s_new) is not None:
        return 0.0
    diff = compare(s_old, s_new) if may_be_parallel(s_old, s_new) else None
    if diff is not None and diff.parallel:
        framed = _frame_verdict(old, new, diff, None, t)
        if framed is not None and framed[0] is PairRelation.UPDATE:
            return 1.0
        if diff.same or (diff.entity and not announces_change_from(old.text, new.text)):
            return 0.0
    return None


def _frame_verdict(
    old: TextFeatures, new: TextFeatures, diff: FrameDiff, why_not: str | None,
    t: RelationThresholds,
) -> tuple[PairRelation, str] | None:  # fmt: skip
    """The decision of a parallel pair, or ``None`` when it is not parallel."""
    if not diff.parallel:
        return None
    if diff.same:
        return PairRelation.DUPLICATE, f"same frame, same words (shared {diff.shared:.2f})"
    if why_not is not None:
        return PairRelation.UNRELATED, why_not
    if diff.value_only:
        if _another_period(old, new):
            return PairRelation.UNRELATED, "a quantity of another period (a series)"
        return PairRelation.UPDATE, _values_changed(old, new)
    if diff.entity:
        return PairRelation.UNRELATED, "same frame, another holder or identifier"
    if _has_change_marker(old, new) and _same_slot(old, new, t):
        return PairRelation.UPDATE, "same holder, new value, change marker"
    return PairRelation.UNRELATED, "same frame, another attribute, scope or detail"


def classify_pair(
    old: TextFeatures, new: TextFeatures, similarity: float, t: RelationThresholds
) -> PairVerdict:
    """How ``new`` relates to ``old`` (``similarity`` is the cosine of their embeddings).

    Only the rules retire the older fact (``_frame_verdict``). The learned update scorer
    does not: on sets written blind it rated look-alikes 0.90 – 1.00 ("Check-in at the
    cabin is 4 pm" / "Checkout … is 10 am") and retired 10 of 265 (W), 8 of 150 (sealed,
    alone) and 15 of 150 in one store. Recall resolves the rest with the query
    (``read_resolution``), where a wrong guess costs a mark, not a current fact
    (docs/tuning.md, seventeenth round)."""

    def verdict(relation: PairRelation, reason: str) -> PairVerdict:
        return PairVerdict(relation=relation, reason=reason, similarity=similarity)

    if old.words == new.words:
        return verdict(PairRelation.DUPLICATE, "same text")
    if similarity < min(t.update_floor, t.dedup_similarity):
        return verdict(PairRelation.UNRELATED, "not similar")
    s_old, s_new = statement(old.text), statement(new.text)
    flip = flip_reason(old, new)
    if flip is None and not s_old.shares_anything(s_new):
        return verdict(PairRelation.UNRELATED, "nothing in common")
    # Most pairs are not written in parallel: the alignment waits until it is needed.
    diff = compare(s_old, s_new) if may_be_parallel(s_old, s_new) else None
    parallel = diff is not None and diff.parallel
    if flip is not None:
        if similarity >= t.contradiction_similarity:
            return verdict(PairRelation.CONTRADICTION, flip)
        if parallel:
            return verdict(PairRelation.UNRELATED, f"not similar enough to contradict ({flip})")
        # Written differently, a negation elsewhere in the sentence flips nothing here.
    why_not = veto(s_old, s_new)
    framed = _frame_verdict(old, new, diff, why_not, t) if diff is not None else None
    if framed is not None and not (
        diff is not None and framed[0] is PairRelation.UNRELATED and reworded(diff)
    ):
        return verdict(*framed)
    unmerged = (
        verdict(*framed)
        if framed is not None
        else verdict(PairRelation.UNRELATED, "different content")
    )
    # A flipped meaning written differently may still be a new value; it is never the same.
    same_sense = flip is None and similarity >= t.dedup_similarity
    if not (same_sense and may_be_duplicate(s_old, s_new, diff)):
        return unmerged
    tied = topic_anchor(s_old, s_new)
    features = text_features(s_old, s_new, similarity, anchor=tied)
    if diff is None:
        # Only a merge can follow: the alignment is needed only if it could make one.
        best = t.duplicate_scorer.best_probability(features, FRAME_FEATURES)
        if best < t.duplicate_scorer.threshold("merge"):
            return verdict(PairRelation.UNRELATED, "different content")
    features |= frame_features(diff or compare(s_old, s_new))
    # The update scorer retires nothing (docstring): it keeps a pair it rates likelier a
    # new value than the same one from being merged. A parallel pair is the rules' to judge.
    scored = why_not is None and tied > 0 and not parallel
    p_update = _scored(t.update_scorer, features) if scored else 0.0
    p_same = _scored(t.duplicate_scorer, features)
    if p_same >= t.duplicate_scorer.threshold("merge") and p_same >= p_update:
        return verdict(PairRelation.DUPLICATE, f"learned: same meaning (p={p_same:.2f})")
    return unmerged


def reworded(diff: FrameDiff) -> bool:
    """In parallel, with words moved to another place ("Ines leads the team" / "the team is
    headed by Ines") and no value, holder or identifier replaced: restructured, maybe the
    same; only the duplicate scorer can tell. A word swapped in place ("green" / "blue",
    "mornings" / "evenings") is another value of an attribute, never the same."""
    return diff.parallel and diff.moved > 0 and not diff.value and not diff.entity


def may_be_duplicate(old: Statement, new: Statement, diff: FrameDiff | None) -> bool:
    """Two statements with other values or another identifier never say the same (values
    compared as said, ``Statement.value_keys``; identifiers up to abbreviation), nor two
    that share under a third of their words."""
    if (old.question, old.irrealis, old.list_item) != (new.question, new.irrealis, new.list_item):
        return False  # a question, condition, report or list item ("… as well") restates none
    if old.value_keys() != new.value_keys() or not same_reading(old.text, new.text):
        return False
    if content_overlap(old, new) < _RESTATED_OVERLAP:
        return False
    if announces_change_from(old.text, new.text) and _names_another(old, new):
        return False  # "Billing migration is Lena's now, Marcus moved over to infra."
    parallel_entity = diff is not None and diff.parallel and diff.entity > 0
    return not parallel_entity and not _identifiers_differ(old, new)


def _names_another(old: Statement, new: Statement) -> bool:
    """``new`` names someone or something (a capitalised word inside it) that ``old`` does
    not mention: with a change announced, the new holder of the value, never a restatement.
    Merging it would keep the older value and lose the newer one."""
    said = set(tokens(old.text)) | old.topic_pool
    return any(name not in said for name in new.names)


def _identifiers_differ(old: Statement, new: Statement) -> bool:
    """An identifier of one side the other does not name: never the same statement."""
    return _unnamed(old, new) or _unnamed(new, old)


def _identifiers_contrast(old: Statement, new: Statement) -> bool:
    """Each side names an identifier the other does not ("Article 25" / "Article 37"):
    two things, unless the newer announces a change, where the identifier is the value
    ("The cabin wifi password is pinecone42" / "he reset the router, it's bluejay77 now").
    An identifier one side leaves out contrasts with nothing ("The Q3 release is on the
    12th" / "Release slipped a week, the new target is the 19th")."""
    return (
        _unnamed(old, new) and _unnamed(new, old) and not announces_change_from(old.text, new.text)
    )


def _unnamed(mine: Statement, other: Statement) -> bool:
    """An identifier of ``mine`` that ``other`` does not name, as an identifier, a value or
    the words it abbreviates ("k8s" / "Kubernetes", "S3" / "Simple Storage Service")."""
    if not mine.identifiers:
        return False
    keys = other.identifiers | {v for _, v in other.values} | other.value_keys()
    words = [item[2].lower() for item in other.items if item[0] in ("h", "p")]
    for code in mine.identifiers - keys:
        raw = next((i[2] for i in mine.items if i[0] == "id" and i[1] == code), code)
        if not any(abbreviates(raw, words[i:j]) for i in range(len(words))
                   for j in range(i + 1, min(i + 5, len(words)) + 1)):  # fmt: skip
            return True
    return False


def scored_stage(
    old: TextFeatures, new: TextFeatures, *, duplicate: bool = False
) -> tuple[Statement, Statement, FrameDiff] | None:
    """The slot views and alignment of a pair a learned scorer decides (``None``: the rules
    decide it before them): what its training data is made of. The duplicate scorer also
    sees the reworded parallel pairs (:func:`reworded`)."""
    if old.words == new.words:
        return None
    s_old, s_new = statement(old.text), statement(new.text)
    diff = compare(s_old, s_new)
    if diff.parallel and not (duplicate and reworded(diff)):
        return None
    return s_old, s_new, diff
