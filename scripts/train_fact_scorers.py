"""Fit the learned fact scorers (update, duplicate, admission, read) on the development data and
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

OUT = Path(__file__).resolve().parents[1] / "src/memory_kernel/heart/facts/weights"


async def fitted(dev: Path, embedder_name: str) -> list[dict[str, object]]:
    """The three scorers fitted on every development row, as JSON documents."""
    data = ft.DevData.read(dev)
    embedder = embedder_from_name(embedder_name)
    try:
        update = await ft.fit_pairs("update", data.pairs, embedder, data.files)
        duplicate = await ft.fit_pairs("duplicate", data.pairs, embedder, data.files)
        read = await ft.fit_pairs("read", data.pairs, embedder, data.files)
    finally:
        await close_embedder(embedder)
    rows = [*data.admission, *ft.statements_of(data.pairs)]
    models = [update, duplicate, ft.admission_scorer(rows, data.files), read]
    sources = {"embedder": embedder.name, "script": "scripts/train_fact_scorers.py"}
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
