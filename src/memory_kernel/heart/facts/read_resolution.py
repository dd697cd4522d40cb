"""Pure read-time decision: among the facts recalled for a query, does a newer one give a
new value of an older one's slot?

The same rules as at write time decide first (``relation.ruled_update``: a question, a
list item, a goal beside a statement or another identifier is never an update; a pair
written in parallel is one when nothing but a value changed, and none when it restates or
names another holder or identifier), then the rules only the
query can give (``query_swap``: a look-alike written in parallel whose newer side replaces
the word the query asks about is about another thing; ``query_slot.no_asked_value``: a
newer fact with nothing that may be the amount, count, day or time asked gives none of
it; ``query_slot.states_of_one_item``: a
question about the state of a numbered thing, "the status of ticket 4411", is answered
newest first by two statements naming exactly that thing; :func:`announced_for`: so is a
query both facts answer when the newer announces a change of what the older is about).
Where they do not decide, the
**read scorer** (logistic regression over the pair features and the query features of
``query_slot``) decides, for pairs that are tied by their words (``pairs.topic_anchor``)
or by the query: both answer it with a value of the kind it asks for, or both hold its
words. A wrong guess costs an ordering and a "(newer value)" mark, never a fact: the
threshold is even odds (``read``).

A search judges more facts than it returns (:data:`SEARCH_POOL`): a newer value is often
phrased without the query's words and recalled below the top ``k``. Such a fact enters the
results only above an older fact it names alike (``pairs.named_alike``: a name or an
identifier in common, "Biscuit weighs 31 pounds" / "Vet visit today - Biscuit was 27.5
lbs"); a word in common is not enough that far down, where facts about other things that
share one ("bedtime", "team", "house") outnumber the values that replace.

Some newer values share nothing with the query at all ("how many books have I read this
year": "Finished Piranesi on the train home, which puts my yearly total at 12."), yet lie
next to the value they replace ("I'm at 9 books for the year"). So a search also reads,
beside each of its first :data:`SUCCESSOR_SOURCES` hits, the :data:`SUCCESSORS_EACH` facts
learned after it that lie nearest to *it*; those the query did not recall are its
**successors**. A successor takes part with that hit only, and is shown only where it
replaces it. (A fact the query recalled below the first ``k``
keeps the rule above: taken as a successor too, it let three more strangers date an older
fact on the sealed sets.)

A tie by the asked kind of value alone (:func:`tied_by_kind_only`) says only that the newer
fact gives a value of that kind; where two or more recalled facts could replace an older
one so (:func:`kind_crowd`), nothing tells which, and none does.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np

from memory_kernel.heart.facts.arithmetic import reconciles
from memory_kernel.heart.facts.change import announces_change_from, change_verb_at
from memory_kernel.heart.facts.frames import compare
from memory_kernel.heart.facts.normalise import TextFeatures, features
from memory_kernel.heart.facts.pairs import (
    covered,
    named_alike,
    pair_features,
    text_features,
    topic_anchor,
    word_ties,
)
from memory_kernel.heart.facts.query_slot import (
    Query,
    answers,
    no_asked_value,
    query_features,
    query_view,
    states_of_one_item,
)
from memory_kernel.heart.facts.query_swap import other_time, swapped_in
from memory_kernel.heart.facts.recency import MAX_COMPARED, newest_first
from memory_kernel.heart.facts.relation import RelationThresholds, ruled_update
from memory_kernel.heart.facts.scorer import LinearScorer
from memory_kernel.heart.facts.slots import Statement, statement
from memory_kernel.models.facts import Fact, FactMatch, FactSearchHit
from memory_kernel.vectors import Vector

__all__ = [
    "SEARCH_POOL",
    "SUCCESSORS_EACH",
    "SUCCESSOR_SOURCES",
    "QueryContext",
    "SlotJudge",
    "kind_crowd",
    "newest_hits",
    "query_tied",
    "read_features",
    "read_judge",
    "read_probability",
    "read_ruled",
    "successor_hits",
    "tied_by_kind_only",
]


#: Facts a search reads and judges, at least, whatever it returns.
SEARCH_POOL = MAX_COMPARED
#: The first hits a search looks beside for newer facts, and how many it takes of each.
SUCCESSOR_SOURCES = 3
SUCCESSORS_EACH = 2


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


def tied_by_kind_only(query: Query, old: Statement, new: Statement) -> bool:
    """Nothing ties ``new`` to ``old`` but a value of the kind ``query`` asks for (or, both
    first-person, of one type): no word in common (``pairs.word_ties``), and none of the
    query's words on the newer side."""
    if word_ties(old, new):
        return False
    return not (query.content and covered(query.content, new.topic_pool))


def kind_crowd(query: Query, old: str, recalled: Iterable[str]) -> int:
    """The other ``recalled`` facts that could replace ``old`` only by their kind: each
    answers ``query`` and is :func:`tied_by_kind_only` to it. Where there are two or more,
    nothing tells which one gives the older fact's slot its new value, so none does."""
    s_old = statement(old)
    return sum(
        1 for text in recalled
        if text != old
        and answers(query, (other := statement(text)))
        and tied_by_kind_only(query, s_old, other)
    )  # fmt: skip


def read_features(
    old: Statement, new: Statement, similarity: float, ctx: QueryContext
) -> dict[str, float]:
    """Every feature of the read scorer by name."""
    features = pair_features(old, new, similarity, compare(old, new))
    features["announced_new"] = float(announces_change_from(old.text, new.text))
    features.update(
        query_features(
            ctx.query, old, new, ctx.cosines.get(old.text, 0.0), ctx.cosines.get(new.text, 0.0)
        )
    )
    return features


def read_ruled(
    query: Query, old: TextFeatures, new: TextFeatures, t: RelationThresholds
) -> float | None:
    """1 or 0 where the rules decide the pair for ``query``; ``None``: the scorer must.
    0: the write-time rules' veto, then :func:`_swapped_apart`,
    :func:`~memory_kernel.heart.facts.query_swap.other_time` and a newer fact without a
    value of the kind asked (``query_slot.no_asked_value``). 1: the write-time rules, two
    states of one item (``query_slot.states_of_one_item``), a change announced for it
    (:func:`announced_for`), or amounts that reconcile (``arithmetic.reconciles``: "40
    seats" / "added 25 seats, so 65 total") where the query ties both; read time only, as
    in one store the amounts of strangers add up by chance (docs/tuning.md, eighteenth
    round)."""
    ruled = ruled_update(old, new, t)
    if ruled is not None:
        return ruled
    s_old, s_new = statement(old.text), statement(new.text)
    if _swapped_apart(query, s_old, s_new) or other_time(query, s_old, s_new):
        return 0.0
    if no_asked_value(query, s_old, s_new):
        return 0.0
    if states_of_one_item(query, s_old, s_new) or announced_for(query, s_old, s_new):
        return 1.0
    if reconciles(s_old, s_new) and query_tied(query, s_old, s_new):
        return 1.0
    return None


def _swapped_apart(query: Query, old: Statement, new: Statement) -> bool:
    """``new`` puts another thing in place of the word the query asks about
    (:func:`~memory_kernel.heart.facts.query_swap.swapped_in`) — unless what it puts there
    is who made a change, the subject of a verb of changing ("Piano lessons are Thursdays"
    / "My piano *teacher* had to switch me to Mondays"; "Leo's thesis defense is May 2" /
    "Leo's *committee* pushed his defense back to May 9"): a change told in other words.
    What the verb changes stays apart ("Changed the *prod* VPN passphrase to heron81" says
    nothing of the staging one's). Found on W (read); sealed sets, newest first · stale
    presented · look-alikes dated, of 150: 114 · 47 · 24 → 116 · 45 · 24 (docs/tuning.md,
    eighteenth round)."""
    put = swapped_in(query, old, new)
    if not put:
        return False
    verb = change_verb_at(new.text)
    lowered = new.text.lower()
    return verb is None or any(lowered.find(word.lower()) > verb for word in put)


def announced_for(query: Query, old: Statement, new: Statement) -> bool:
    """The newer statement announces a change (``change.announces_change_from``: "Dana
    switched to the children's hospital") about what the older one is about
    (``pairs.topic_anchor``: "My cousin Dana works as a nurse at St. Luke's"), both answer
    the query (``query_tied``) by more than the kind of value it asks for
    (:func:`tied_by_kind_only`: in a full store, many facts announce a new date or day),
    and it does not put another holder in place of one the query asks about ("Changed the
    prod VPN passphrase…" says nothing of the staging one's). A name in place of another is
    no such holder: it is often the value ("after the reorg I report to Sunita" / "my
    manager is Derek")."""
    if not announces_change_from(old.text, new.text) or not topic_anchor(old, new):
        return False
    if not query_tied(query, old, new) or tied_by_kind_only(query, old, new):
        return False
    gone = tuple(w for w in old.holder if w != "i" and not covered((w,), new.content))
    asked = bool(gone) and covered(gone, query.content) > 0
    return not (asked and text_features(old, new, 0.0)["holder_swap"])


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
    crowds: dict[str, int] = {}

    def crowd(old: str) -> int:
        if old not in crowds:
            crowds[old] = kind_crowd(ctx.query, old, ctx.cosines)
        return crowds[old]

    def judge(old: str, new: str, cosine: float) -> bool:
        if read_probability(features(old), features(new), cosine, t, scorer, ctx) < at:
            return False
        return not tied_by_kind_only(ctx.query, statement(old), statement(new)) or crowd(old) < 2

    return judge


def successor_hits(
    near: Mapping[uuid.UUID, Sequence[tuple[Fact, Vector]]], query: Vector | None
) -> dict[uuid.UUID, list[FactSearchHit]]:
    """The successors of each hit (``{hit id: [(fact, its vector)]}``) as search hits, each
    scored by its cosine to the ``query``."""
    return {
        source: [FactSearchHit(fact=fact, matched_by=FactMatch.VECTOR,
                               similarity=0.0 if query is None else float(np.dot(v, query)))
                 for fact, v in beside]
        for source, beside in near.items()
    }  # fmt: skip


def newest_hits(
    hits: Sequence[FactSearchHit], *, k: int, judge: SlotJudge,
    vectors: Mapping[uuid.UUID, Vector],
    successors: Mapping[uuid.UUID, Sequence[FactSearchHit]] | None = None,
) -> list[FactSearchHit]:  # fmt: skip
    """The first ``k`` of ``hits`` (best first) with two current values of one slot
    resolved: the newer one first, the older one marked with it (``recency``). A hit below
    the first ``k`` takes part only with an older fact it names alike; a successor (``{hit
    id: facts learned after it, nearest to it}``, none of ``hits``) only with its hit, and
    is shown only where it replaces it."""
    shown = {h.fact.id for h in hits[:k]}
    successors = successors or {}
    source_of = {s.fact.id: hit for hit, found in successors.items() for s in found}
    listed = [x for h in hits for x in (h, *successors.get(h.fact.id, ()))]

    def cosine(old: FactSearchHit, new: FactSearchHit) -> float:
        va, vb = vectors.get(old.fact.id), vectors.get(new.fact.id)
        return 0.0 if va is None or vb is None else float(np.dot(va, vb))

    def updates(old: FactSearchHit, new: FactSearchHit) -> bool:
        if new.fact.id in source_of or old.fact.id in source_of:
            if source_of.get(new.fact.id) != old.fact.id:
                return False
        elif not (old.fact.id in shown and new.fact.id in shown) and not named_alike(
            statement(old.fact.content), statement(new.fact.content)
        ):
            return False
        return judge(old.fact.content, new.fact.content, cosine(old, new))

    ordered, replaced_by = newest_first(
        listed, key=lambda h: h.fact.id,
        newer=lambda a, b: (a.fact.valid_from, a.fact.created_at)
        > (b.fact.valid_from, b.fact.created_at),
        updates=updates, closeness=cosine,
    )  # fmt: skip
    replacing = set(replaced_by.values())
    return [
        h.model_copy(update={"newer_value": replaced_by[h.fact.id]})
        if h.fact.id in replaced_by else h
        for h in ordered
        if h.fact.id not in source_of or h.fact.id in replacing
    ][:k]  # fmt: skip
