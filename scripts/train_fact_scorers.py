"""Fit the learned fact scorers (update, duplicate, admission) on the development data and
write the weights the package ships (``src/memory_kernel/heart/facts/weights/*.json``).

    python scripts/train_fact_scorers.py --dev ../shared/eval/dev [--embedder hashing]

Deterministic: the same data, embedder and code give the same weights (Newton's method
from zero, fixed seed for the cross pairs). Only development files are read; the
cross-validated figures of the same procedure come from ``memory-kernel eval SUITE --data
FILE --folds 5`` (the fold is fitted by the same functions, ``eval/fact_training.py``).
The pair scorers use the embedder's cosine, so weights belong to one embedder: retrain
with ``--embedder`` for another one and point ``heart.fact_scorer_dir`` at the output.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

from memory_kernel.eval import fact_training as ft
from memory_kernel.eval.embedders import close_embedder, embedder_from_name

KU = ("ku_update_pairs_dev.jsonl", "ku_distinct_pairs_dev.jsonl", "ku_pairs_dev.jsonl")
DEDUP = ("dedup_pairs_authored_dev.jsonl", "dedup_pairs_dev.jsonl")
ADMISSION = ("fact_admission_authored_dev.jsonl", "fact_admission_dev.jsonl")
OUT = Path(__file__).resolve().parents[1] / "src/memory_kernel/heart/facts/weights"


async def fitted(dev: Path, embedder_name: str) -> list[dict[str, object]]:
    """The three scorers fitted on every development row, as JSON documents."""
    ku = [p for name in KU for p in ft.read_ku(dev / "knowledge_update" / name)]
    dedup = [p for name in DEDUP for p in ft.read_dedup(dev / "dedup_pairs" / name)]
    rows = [r for name in ADMISSION for r in ft.read_admission(dev / "fact_admission" / name)]
    embedder = embedder_from_name(embedder_name)
    try:
        pairs = [*ku, *dedup]
        cosines = await ft.cosine_of([*pairs, *ft.cross_pairs(pairs)], embedder)
    finally:
        await close_embedder(embedder)
    sources = {"embedder": embedder.name, "script": "scripts/train_fact_scorers.py"}
    models = [
        ft.update_scorer(pairs, cosines, [*KU, *DEDUP]),
        ft.duplicate_scorer(pairs, cosines, [*DEDUP, *KU]),
        ft.admission_scorer([*rows, *ft.statements_of(pairs)], [*ADMISSION, *KU, *DEDUP]),
    ]
    docs = []
    for model in models:
        doc = model.to_json()
        doc["trained_on"] = {**doc["trained_on"], **sources}
        docs.append(doc)
    return docs


def main(dev: Path, embedder_name: str, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for doc in asyncio.run(fitted(dev, embedder_name)):
        path = out / f"{doc['name']}.json"
        path.write_text(json.dumps(doc, indent=1) + "\n", "utf-8")
        print(f"{path}: {doc['trained_on']} thresholds {doc['thresholds']}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dev", type=Path, required=True, help="shared/eval/dev")
    parser.add_argument("--embedder", default="hashing")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    main(args.dev, args.embedder, args.out)
