"""Training data and fit of the read scorer (``heart/facts/read_resolution.py``), shared by
``scripts/train_fact_scorers.py`` and the cross-validation of the ``ku`` suite.

Only pairs with a question (the knowledge-update files' ``topic``) teach it: the pair
itself (an update, or a look-alike that is not one) under its topic, and each of its facts
beside the facts of *other* rows that the topic recalls best (what a search for the topic
would put next to it), in both orders, as pairs that are not updates. As at read time,
pairs the rules decide (a veto, a pair written in parallel, the query's word swapped out:
``read_resolution.read_ruled``) and pairs tied neither by
their words nor by the query are left out: the scorer never sees them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from memory_kernel.config import HeartConfig
from memory_kernel.eval.fact_training import READ_AT, LabelledPair
from memory_kernel.eval.kernel_api import (
    READ_FEATURES,
    LinearScorer,
    QueryContext,
    RelationThresholds,
    features,
    fit_scorer,
    query_tied,
    query_view,
    read_features,
    read_ruled,
    statement,
    topic_anchor,
)
from memory_kernel.vectors import Vector

__all__ = ["CROSS_RECALLED", "READ_L2", "read_rows", "read_scorer"]

#: Facts of other rows a topic recalls (nearest to it), paired with each fact of its row:
#: the strangers a search puts beside a pair in a store that holds many facts. Cross-validated
#: on three fold splits in one store of every KU pair, 8 rather than 4 halves some of the
#: marks "replaced by" a stranger and keeps the per-pair figures (docs/tuning.md, seventh
#: round).
CROSS_RECALLED = 8
#: Ridge of the read scorer's fit: three times the default, as for the admission scorer
#: (few positives: about sixty updates); cross-validated, weaker ridges fit the rows.
READ_L2 = 3.0


def _candidates(
    pairs: Sequence[LabelledPair], vectors: Mapping[str, Vector]
) -> list[tuple[str, str, str, float]]:
    """``(old, new, topic, label)`` of every pair the read scorer is trained on."""
    rows: dict[str, set[int]] = {}
    for i, pair in enumerate(pairs):
        for text in (pair.old, pair.new):
            rows.setdefault(text, set()).add(i)
    texts = sorted(rows)
    matrix = np.stack([vectors[t] for t in texts])
    out: list[tuple[str, str, str, float]] = []
    for i, pair in enumerate(pairs):
        if pair.topic is None or pair.update is None:
            continue
        out.append((pair.old, pair.new, pair.topic, float(pair.update)))
        to_topic = matrix @ vectors[pair.topic]
        others = [j for j in np.argsort(-to_topic) if i not in rows[texts[j]]]
        for j in others[:CROSS_RECALLED]:
            for mine in (pair.old, pair.new):
                out += [(texts[j], mine, pair.topic, 0.0), (mine, texts[j], pair.topic, 0.0)]
    return out


def read_rows(
    pairs: Sequence[LabelledPair], vectors: Mapping[str, Vector]
) -> tuple[list[dict[str, float]], list[float]]:
    """The read scorer's feature rows and labels (pairs the rules decide left out)."""
    t = RelationThresholds.from_config(HeartConfig())
    xs: list[dict[str, float]] = []
    ys: list[float] = []
    for old, new, topic, label in _candidates(pairs, vectors):
        query = query_view(topic)
        if read_ruled(query, features(old), features(new), t) is not None:
            continue
        s_old, s_new = statement(old), statement(new)
        if topic_anchor(s_old, s_new) == 0 and not query_tied(query, s_old, s_new):
            continue
        cosines = {text: float(np.dot(vectors[text], vectors[topic])) for text in (old, new)}
        ctx = QueryContext(query, cosines)
        similarity = float(np.dot(vectors[old], vectors[new]))
        xs.append(read_features(s_old, s_new, similarity, ctx))
        ys.append(label)
    return xs, ys


def read_scorer(
    pairs: Sequence[LabelledPair], vectors: Mapping[str, Vector],
    queries: Mapping[str, Vector], sources: Sequence[str] = (),
) -> LinearScorer:  # fmt: skip
    """The read scorer fitted on the pairs with a topic (``vectors``: every statement's,
    ``queries``: every topic's)."""
    every = {**vectors, **queries}
    xs, ys = read_rows(pairs, every)
    x = np.array([[f[n] for n in READ_FEATURES] for f in xs], dtype=np.float64)
    y = np.array(ys, dtype=np.float64)
    trained = {"files": list(sources), "pairs": len(y), "positives": int(y.sum())}
    model = fit_scorer("read", READ_FEATURES, x, y, trained_on=trained, l2=READ_L2)
    return replace(model, thresholds={"read": READ_AT})
