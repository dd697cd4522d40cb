"""Pure read-time decision: among the facts recalled for a query, does a newer one give a
new value of an older one's slot?

The same rules as at write time decide first (``relation.ruled_update``: a question, a
list item, a goal beside a statement or another identifier is never an update; a pair
written in parallel is one only when nothing but a value changed), then one rule only the
query can give (``query_swap``: a look-alike written in parallel whose newer side replaces
the word the query asks about is about another thing). Where they do not decide, the
**read scorer** (logistic regression over the pair features and the query features of
``query_slot``) decides, for pairs that are tied by their words (``pairs.topic_anchor``)
or by the query: both answer it with a value of the kind it asks for, or both hold its
words. A wrong guess costs an ordering and a "(newer value)" mark, never a fact: the
threshold is even odds (``read``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from memory_kernel.heart.facts.change import announces_change
from memory_kernel.heart.facts.frames import compare
from memory_kernel.heart.facts.normalise import TextFeatures, features
from memory_kernel.heart.facts.pairs import pair_features, topic_anchor
from memory_kernel.heart.facts.query_slot import Query, query_features, query_view
from memory_kernel.heart.facts.query_swap import swapped_out
from memory_kernel.heart.facts.relation import RelationThresholds, ruled_update
from memory_kernel.heart.facts.scorer import LinearScorer
from memory_kernel.heart.facts.slots import Statement, statement

__all__ = [
    "QueryContext",
    "SlotJudge",
    "query_tied",
    "read_features",
    "read_judge",
    "read_probability",
    "read_ruled",
]


class QueryContext:
    """The query of a search and each recalled fact's cosine to it."""

    __slots__ = ("cosines", "query")

    def __init__(self, query: Query, cosines: dict[str, float]) -> None:
        self.query = query
        self.cosines = cosines  # fact text -> cosine to the query (0 when unknown)


def query_tied(query: Query, old: Statement, new: Statement) -> bool:
    """Both facts answer ``query``: a value of an asked kind on each side, or each side
    holding one of its words (the slot named twice)."""
    features = query_features(query, old, new, 0.0, 0.0)
    if features["q_answer_both"] and (features["q_cover_old"] or features["q_cover_new"]):
        return True
    return bool(features["q_cover_old"] and features["q_cover_new"])


def read_features(
    old: Statement, new: Statement, similarity: float, ctx: QueryContext
) -> dict[str, float]:
    """Every feature of the read scorer by name."""
    features = pair_features(old, new, similarity, compare(old, new))
    features["announced_new"] = float(announces_change(new.text))
    features.update(
        query_features(
            ctx.query, old, new, ctx.cosines.get(old.text, 0.0), ctx.cosines.get(new.text, 0.0)
        )
    )
    return features


def read_ruled(
    query: Query, old: TextFeatures, new: TextFeatures, t: RelationThresholds
) -> float | None:
    """1 or 0 where the rules decide the pair for ``query`` (the write-time rules, then
    :func:`~memory_kernel.heart.facts.query_swap.swapped_out`); ``None``: the scorer must."""
    ruled = ruled_update(old, new, t)
    if ruled is not None:
        return ruled
    if swapped_out(query, statement(old.text), statement(new.text)):
        return 0.0
    return None


def read_probability(
    old: TextFeatures, new: TextFeatures, similarity: float, t: RelationThresholds,
    scorer: LinearScorer, ctx: QueryContext,
) -> float:  # fmt: skip
    """How likely ``new`` (the newer recalled fact) gives a new value of ``old``'s slot."""
    ruled = read_ruled(ctx.query, old, new, t)
    if ruled is not None:
        return ruled
    s_old, s_new = statement(old.text), statement(new.text)
    if topic_anchor(s_old, s_new) == 0 and not query_tied(ctx.query, s_old, s_new):
        return 0.0
    features = read_features(s_old, s_new, similarity, ctx)
    return scorer.probability([features[name] for name in scorer.features])


#: ``judge(old_text, new_text, cosine)``: whether the newer fact gives the older one's slot a
#: new value, for one query.
SlotJudge = Callable[[str, str, float], bool]


def read_judge(
    query: str, cosines: Mapping[str, float], t: RelationThresholds, scorer: LinearScorer
) -> SlotJudge:
    """The read-time decision for the facts recalled for ``query`` (``cosines``: each fact
    text's cosine to it), at the scorer's ``read`` threshold: what ``facts.search`` and the
    context's recall (``context.current``) both use."""
    ctx = QueryContext(query_view(query), dict(cosines))
    at = scorer.threshold("read")

    def judge(old: str, new: str, cosine: float) -> bool:
        return read_probability(features(old), features(new), cosine, t, scorer, ctx) >= at

    return judge
