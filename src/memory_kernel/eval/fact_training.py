"""Training data and fitting of the learned fact scorers (update, duplicate, admission),
shared by ``scripts/train_fact_scorers.py`` (the shipped weights, fitted on every
development row) and the cross-validation harness (``eval/fact_models.py``: fitted on the
training folds only), so both fit the same way.

Pairs are scored only where the rules leave them (``relation.scored_stage``: not the same
words, no flipped meaning, not written in parallel), so each scorer is trained on the kind
of pair it will see. Besides the labelled pairs, every file's statements are paired at
random with statements of *other* rows ("cross pairs"): a fact next to an unrelated one is
neither an update nor a duplicate, which the labelled pairs alone (all on one topic) never
show.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from memory_kernel.config import HeartConfig
from memory_kernel.eval.kernel_api import (
    ADMISSION_FEATURES,
    PAIR_FEATURES,
    LinearScorer,
    admission_features,
    features,
    fit_scorer,
    flip_reason,
    is_question,
    is_request,
    may_be_duplicate,
    pair_features,
    scored_stage,
    topic_anchor,
    veto,
)
from memory_kernel.protocols import Embedder
from memory_kernel.vectors import Vector

__all__ = [
    "DevData",
    "LabelledPair",
    "admission_scorer",
    "cosine_of",
    "duplicate_scorer",
    "fit_pairs",
    "read_admission",
    "read_dedup",
    "read_ku",
    "statements_of",
    "update_scorer",
]

#: Partners per statement for the cross pairs: its nearest statements of other rows (what a
#: learn compares it with) and a few random ones; fixed seed: reproducible weights.
CROSS_NEAREST, CROSS_RANDOM = 8, 2
CROSS_SEED = 1
DEDUP_FROM = HeartConfig().fact_dedup_similarity
#: Probabilities at which a scorer acts (the classes weigh the same in training, so 0.5
#: is "as likely as not"): merging a restatement on 3:1 (merging keeps both texts'
#: evidence), showing a newer fact first at even odds (nothing is written). The update
#: scorer acts on no threshold: it retires nothing (``relation.classify_pair``), it only
#: keeps a likelier new value from a merge.
MERGE_AT, READ_AT = 0.75, 0.5
#: A fact is rejected only when the scorer is 4:1 sure it is filler: a fact wrongly
#: rejected is lost, filler wrongly kept only costs recall a little noise.
ADMIT_AT = 0.2


#: The development files each scorer learns from (``shared/eval/dev/<folder>/<file>``).
KU_FILES = ("ku_update_pairs_dev.jsonl", "ku_distinct_pairs_dev.jsonl", "ku_pairs_dev.jsonl")
DEDUP_FILES = ("dedup_pairs_authored_dev.jsonl", "dedup_pairs_dev.jsonl")
ADMISSION_FILES = ("fact_admission_authored_dev.jsonl", "fact_admission_dev.jsonl")


@dataclass(frozen=True, slots=True)
class DevData:
    """Every development row the scorers learn from (``exclude``: a file left out, the one
    cross-validation holds folds of)."""

    pairs: list[LabelledPair]
    admission: list[tuple[str, bool]]
    files: list[str]

    @classmethod
    def read(cls, dev: Path, exclude: Path | None = None) -> DevData:
        pairs: list[LabelledPair] = []
        rows: list[tuple[str, bool]] = []
        files: list[str] = []
        skip = exclude.resolve() if exclude is not None else None
        for folder, names, reader in (
            ("knowledge_update", KU_FILES, read_ku), ("dedup_pairs", DEDUP_FILES, read_dedup),
        ):  # fmt: skip
            for name in names:
                path = dev / folder / name
                if path.is_file() and path.resolve() != skip:
                    pairs += reader(path)
                    files.append(name)
        for name in ADMISSION_FILES:
            path = dev / "fact_admission" / name
            if path.is_file() and path.resolve() != skip:
                rows += read_admission(path)
                files.append(name)
        return cls(pairs, rows, files)


@dataclass(frozen=True, slots=True)
class LabelledPair:
    key: str
    old: str
    new: str
    update: bool | None  # None: not an update question (a dedup pair)
    same: bool | None  # None: not a dedup question (a knowledge-update pair)
    topic: str | None = None  # the question both answer (knowledge-update pairs)


def _rows(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def read_ku(path: Path) -> list[LabelledPair]:
    out = []
    for row in _rows(path):
        key = str(row.get("id", row.get("qi")))
        label = str(row.get("label") or "update")
        out.append(LabelledPair(f"{path.name}:{key}", str(row["old_fact"]),
                                str(row["new_fact"]), label == "update", False,
                                str(row["topic"]) if row.get("topic") else None))  # fmt: skip
    return out


def read_dedup(path: Path) -> list[LabelledPair]:
    out = []
    for row in _rows(path):
        same = bool(int(str(row["label"])))
        kind = str(row.get("kind") or "")
        # A paraphrase is no new value; a topic neighbour is no new value of the same slot.
        update = False if same or kind == "unrelated_same_topic" else None
        out.append(LabelledPair(f"{path.name}:{row['id']}", str(row["a"]), str(row["b"]),
                                update, same))  # fmt: skip
    return out


def read_admission(path: Path) -> list[tuple[str, bool]]:
    return [(str(r["content"]), r["label"] == "admit") for r in _rows(path)]


def cross_pairs(pairs: Sequence[LabelledPair], vectors: dict[str, Vector]) -> list[LabelledPair]:
    """Each statement beside the statements of other rows a learn would compare it with:
    its nearest neighbours by cosine (``CROSS_NEAREST``), plus a few random ones
    (``CROSS_RANDOM``). None of them is an update or a duplicate of it."""
    rng = random.Random(CROSS_SEED)
    rows: dict[str, set[int]] = {}
    for i, pair in enumerate(pairs):
        rows.setdefault(pair.old, set()).add(i)
        rows.setdefault(pair.new, set()).add(i)
    texts = sorted(rows)
    matrix = np.stack([vectors[t] for t in texts])
    sims = matrix @ matrix.T
    out = []
    for a, text in enumerate(texts):
        others = [b for b in range(len(texts)) if not rows[texts[b]] & rows[text]]
        nearest = sorted(others, key=lambda b: -float(sims[a, b]))[:CROSS_NEAREST]
        rest = [b for b in others if b not in nearest]
        chosen = nearest + rng.sample(rest, min(CROSS_RANDOM, len(rest)))
        out += [LabelledPair(f"x:{a}:{b}", text, texts[b], False, False) for b in chosen]
    return out


async def embedded(texts: Sequence[str], embedder: Embedder) -> dict[str, Vector]:
    from memory_kernel.eval.kernel_api import embed_checked

    unique = sorted(set(texts))
    vectors = await embed_checked(embedder, unique, timeout=None)
    return {t: vectors[i] for i, t in enumerate(unique)}


async def cosine_of(pairs: Sequence[LabelledPair], embedder: Embedder) -> dict[str, float]:
    at = await embedded([t for p in pairs for t in (p.old, p.new)], embedder)
    return {p.key: float(np.dot(at[p.old], at[p.new])) for p in pairs}


async def fit_pairs(
    kind: str, pairs: Sequence[LabelledPair], embedder: Embedder, sources: Sequence[str] = ()
) -> LinearScorer:
    """The ``update`` or ``duplicate`` scorer fitted on ``pairs`` and their cross pairs, or
    the ``read`` scorer on the pairs with a topic (``eval/read_training.py``)."""
    at = await embedded([t for p in pairs for t in (p.old, p.new)], embedder)
    if kind == "read":
        from memory_kernel.eval.read_training import read_scorer

        queries = await embedded([p.topic for p in pairs if p.topic], embedder)
        return read_scorer(pairs, at, queries, sources)
    every = [*pairs, *cross_pairs(pairs, at)]
    cosines = {p.key: float(np.dot(at[p.old], at[p.new])) for p in every}
    fit = update_scorer if kind == "update" else duplicate_scorer
    return fit(every, cosines, sources)


def _stage(pairs: Sequence[LabelledPair], cosines: dict[str, float], *, update: bool
           ) -> tuple[list[dict[str, float]], list[float]]:  # fmt: skip
    xs, ys = [], []
    for pair in pairs:
        label = pair.update if update else pair.same
        if label is None:
            continue
        staged = scored_stage(features(pair.old), features(pair.new), duplicate=not update)
        if staged is None:
            continue
        old, new, diff = staged
        if update and (veto(old, new) is not None or not topic_anchor(old, new)):
            continue
        # The duplicate scorer only sees candidates from the dedup cosine on (as in learn).
        if not update and (
            cosines[pair.key] < DEDUP_FROM
            or flip_reason(features(pair.old), features(pair.new)) is not None
            or not may_be_duplicate(old, new, diff)
        ):
            continue
        xs.append(pair_features(old, new, cosines[pair.key], diff))
        ys.append(float(label))
    return xs, ys


def _fit_pairs(name: str, pairs: Sequence[LabelledPair], cosines: dict[str, float], *,
               update: bool, sources: Sequence[str]) -> LinearScorer:  # fmt: skip
    xs, ys = _stage(pairs, cosines, update=update)
    x = np.array([[f[n] for n in PAIR_FEATURES] for f in xs], dtype=np.float64)
    y = np.array(ys, dtype=np.float64)
    trained = {"files": list(sources), "pairs": len(y), "positives": int(y.sum())}
    model = fit_scorer(name, PAIR_FEATURES, x, y, trained_on=trained)
    thresholds = {} if update else {"merge": MERGE_AT}
    return replace(model, thresholds=thresholds)


def update_scorer(pairs: Sequence[LabelledPair], cosines: dict[str, float],
                  sources: Sequence[str] = ()) -> LinearScorer:  # fmt: skip
    """The update scorer fitted on ``pairs`` (knowledge-update pairs, the dedup pairs that
    say something about updates, cross pairs)."""
    return _fit_pairs("update", pairs, cosines, update=True, sources=sources)


def duplicate_scorer(pairs: Sequence[LabelledPair], cosines: dict[str, float],
                     sources: Sequence[str] = ()) -> LinearScorer:  # fmt: skip
    """The duplicate scorer fitted on ``pairs`` (dedup pairs; knowledge-update pairs and
    cross pairs are never duplicates)."""
    return _fit_pairs("duplicate", pairs, cosines, update=False, sources=sources)


def statements_of(pairs: Sequence[LabelledPair]) -> list[tuple[str, bool]]:
    """The statements of the dedup and knowledge-update pairs, as facts to admit: each was
    written as a fact worth remembering (the questions and requests among them never reach
    the scorer, the rules reject them first)."""
    texts = sorted({t for p in pairs for t in (p.old, p.new)})
    return [(t, True) for t in texts if not is_question(t) and not is_request(t)]


def admission_scorer(rows: Sequence[tuple[str, bool]], sources: Sequence[str] = ()
                     ) -> LinearScorer:  # fmt: skip
    """The admission scorer fitted on ``(content, admit)`` rows (both classes weigh the
    same in total)."""
    x = np.array([[admission_features(text)[n] for n in ADMISSION_FEATURES] for text, _ in rows])
    y = np.array([float(admit) for _, admit in rows])
    trained = {"files": list(sources), "rows": len(y), "positives": int(y.sum())}
    model = fit_scorer("admission", ADMISSION_FEATURES, x, y, trained_on=trained, l2=3)
    return replace(model, thresholds={"admit": ADMIT_AT})
