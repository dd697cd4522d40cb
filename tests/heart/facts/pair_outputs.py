"""Digests of everything the fact pair rules compute for the development pairs: the
verdict of ``classify_pair``, the update probability without a query, the frame alignment and
every pair feature, for each pair in both orders at several similarities, and for each
statement against its nearest other statements (the unrelated pairs a learn mostly sees).

A speed change to the pair code must leave every digest as it was; a change meant to alter
the decisions (new rules, retrained scorers) rewrites them:

    PYTHONPATH=src python tests/heart/facts/pair_outputs.py ../shared/eval/dev

Only ids and digests are stored (the development data stays out of the repository).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sys
from pathlib import Path

import numpy as np

from memory_kernel.config import HeartConfig
from memory_kernel.embeddings.hashing import HashingEmbedder
from memory_kernel.eval.fact_training import DevData
from memory_kernel.heart.facts.frames import compare
from memory_kernel.heart.facts.normalise import features
from memory_kernel.heart.facts.pairs import pair_features
from memory_kernel.heart.facts.relation import (
    RelationThresholds,
    classify_pair,
    scored_stage,
    update_probability,
)
from memory_kernel.heart.facts.slots import statement

GOLDEN = Path(__file__).parent / "data" / "pair_outputs.json"
SIMILARITIES = (0.2, 0.35, 0.5, 0.62, 0.7, 0.8, 0.9, 0.97)
NEAREST = 8


def _one(old: str, new: str, cosine: float, t: RelationThresholds) -> str:
    f_old, f_new = features(old), features(new)
    s_old, s_new = statement(old), statement(new)
    diff = compare(s_old, s_new)
    parts: list[object] = [repr(diff), sorted(pair_features(s_old, s_new, cosine, diff).items())]
    parts.append(scored_stage(f_old, f_new) is None)
    parts.append(scored_stage(f_old, f_new, duplicate=True) is None)
    for sim in (cosine, *SIMILARITIES):
        verdict = classify_pair(f_old, f_new, sim, t)
        parts += [verdict.relation.value, verdict.reason, update_probability(f_old, f_new, sim, t)]
    return hashlib.sha1(repr(parts).encode()).hexdigest()[:16]


def digests(dev: Path) -> dict[str, str]:
    """One digest per (pair, order), and per statement against its nearest neighbours."""
    pairs = DevData.read(dev).pairs
    texts = sorted({p.old for p in pairs} | {p.new for p in pairs})
    vectors = np.asarray(asyncio.run(HashingEmbedder().embed(texts)))
    index = {text: i for i, text in enumerate(texts)}
    sims = vectors @ vectors.T
    t = RelationThresholds.from_config(HeartConfig())
    out: dict[str, str] = {}
    for p in pairs:
        cosine = float(sims[index[p.old], index[p.new]])
        out[f"{p.key}:ab"] = _one(p.old, p.new, cosine, t)
        out[f"{p.key}:ba"] = _one(p.new, p.old, cosine, t)
    for i, text in enumerate(texts):
        near = [int(j) for j in np.argsort(-sims[i]) if j != i][:NEAREST]
        row = [_one(texts[j], text, float(sims[i, j]), t) for j in near]
        key = hashlib.sha1(text.encode()).hexdigest()[:12]
        out[f"near:{key}"] = hashlib.sha1("".join(row).encode()).hexdigest()[:16]
    return out


if __name__ == "__main__":
    found = digests(Path(sys.argv[1]))
    GOLDEN.write_text(json.dumps(found, indent=0, sort_keys=True) + "\n", "utf-8")
    print(f"{GOLDEN}: {len(found)} digests")
