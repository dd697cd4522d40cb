"""Dedup: is a second statement merged into the first (reinforced) or stored apart?

Reads either the project's pairs JSONL (``{"id", "a", "b", "label"}``) or the MRPC TSV
(``Quality, #1 ID, #2 ID, #1 String, #2 String``) — detected from the file. Each pair is
learned (a, then b) by ``kernel.heart.facts`` in an agent of its own, as explicit facts so the
admission gate does not interfere; b being REINFORCED is the dedup decision. For MRPC it also
reports the ROC AUC of the raw cosine and P/R of the cosine alone at the configured threshold.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np

from memory_kernel.config import MemoryKernelConfig
from memory_kernel.embeddings import embed_checked
from memory_kernel.errors import ConfigError, EmbedderError
from memory_kernel.eval._metrics import binary_metrics, roc_auc
from memory_kernel.eval.progress import progress
from memory_kernel.eval.report import SuiteReport
from memory_kernel.eval.store import eval_kernel
from memory_kernel.models.facts import FactInput, LearnAction, LearnOutcome
from memory_kernel.protocols import Embedder

__all__ = ["cosines", "decide", "load_pairs", "run"]

Pair = tuple[str, str, str, bool]  # id, a, b, is-duplicate
_CHUNK = 100  # pairs per learn_many call: a progress step, and bounded transactions


def _jsonl(text: str) -> list[Pair]:
    pairs = []
    for line in text.splitlines():
        if line.strip():
            row = json.loads(line)
            pairs.append((str(row["id"]), str(row["a"]), str(row["b"]), bool(int(row["label"]))))
    return pairs


def _mrpc(text: str) -> list[Pair]:
    reader = csv.reader(text.lstrip("\ufeff").splitlines(), delimiter="\t", quoting=csv.QUOTE_NONE)
    pairs = []
    for row in reader:
        if len(row) >= 5 and row[0].strip() in ("0", "1"):
            pairs.append((f"{row[1]}-{row[2]}", row[3], row[4], row[0].strip() == "1"))
    return pairs


def load_pairs(path: Path) -> tuple[str, list[Pair]]:
    """``("pairs" | "mrpc", pairs)``; the format is told by the first line."""
    try:
        text = path.read_text("utf-8")
        if text.lstrip("\ufeff").lstrip().startswith("{"):
            return "pairs", _jsonl(text)
        return "mrpc", _mrpc(text)
    except (OSError, ValueError, KeyError) as exc:
        raise ConfigError(f"cannot read dedup pairs from {path}: {exc}") from exc


async def decide(
    pairs: list[Pair], embedder: Embedder, *, config: MemoryKernelConfig | None = None
) -> list[LearnOutcome]:
    """Learn each pair (a, then b) in an agent of its own; the outcomes of the b's."""
    outcomes: list[LearnOutcome] = []
    async with eval_kernel(embedder, config=config) as kernel:
        with progress("dedup pairs", len(pairs)) as advance:
            for start in range(0, len(pairs), _CHUNK):
                batch: list[FactInput] = []
                for n, (_, a, b, _) in enumerate(pairs[start : start + _CHUNK], start):
                    agent = f"dd-{n}"
                    batch += [FactInput(agent_id=agent, content=a, explicit=True),
                              FactInput(agent_id=agent, content=b, explicit=True)]  # fmt: skip
                learned = await kernel.heart.facts.learn_many(batch)
                if any(o.pending_embedding for o in learned):
                    # Without a vector a fact has no dedup candidate: the numbers would lie.
                    raise EmbedderError(
                        f"embedder {embedder.name!r} failed during the dedup run (facts were "
                        "stored without a vector); no measurement"
                    )
                outcomes += learned[1::2]
                advance(len(batch) // 2)
    return outcomes


async def run(
    data: Path, embedder: Embedder, *, config: MemoryKernelConfig | None = None
) -> SuiteReport:
    kind, pairs = load_pairs(data)
    if not pairs:
        raise ConfigError(f"no dedup pairs in {data}")
    outcomes = await decide(pairs, embedder, config=config)
    merged = [o.action is LearnAction.REINFORCED for o in outcomes]
    gold = [p[3] for p in pairs]
    decision = binary_metrics(merged, gold)
    metrics: dict[str, float | int] = {
        "pairs": len(pairs),
        "precision": decision["precision"],
        "recall": decision["recall"],
        "accuracy": decision["accuracy"],
        "f1": decision["f1"],
        "negatives_merged": decision["fp"],
    }
    errors = [
        {"id": p[0], "label": int(p[3]), "decision": o.action.value, "reason": o.reason}
        for p, o, m in zip(pairs, outcomes, merged, strict=True)
        if m != p[3]
    ]
    targets = {"accuracy": ">= 0.9", "negatives_merged": "0"}
    if kind == "mrpc":
        metrics.update(await _cosine_metrics(pairs, embedder, config or MemoryKernelConfig()))
        targets = {}
        errors = errors[:25]
    return SuiteReport(
        suite="dedup",
        data=str(data),
        embedder=embedder.name,
        metrics=metrics,
        tables={"errors": errors},
        notes=[f"format: {kind}; decision = second statement reinforced the first"],
        targets=targets,
    )


async def cosines(pairs: list[Pair], embedder: Embedder) -> list[float]:
    """The raw cosine of each pair (the vectors are unit length)."""
    left = await embed_checked(embedder, [p[1] for p in pairs], timeout=None)
    right = await embed_checked(embedder, [p[2] for p in pairs], timeout=None)
    return [float(c) for c in np.einsum("ij,ij->i", left, right)]


async def _cosine_metrics(
    pairs: list[Pair], embedder: Embedder, config: MemoryKernelConfig
) -> dict[str, float | int]:
    threshold = config.heart.fact_dedup_similarity
    scores = await cosines(pairs, embedder)
    gold = [p[3] for p in pairs]
    at = binary_metrics([c >= threshold for c in scores], gold)
    return {
        "cosine_roc_auc": round(roc_auc(scores, gold), 4),
        "cosine_threshold": threshold,
        "cosine_precision": at["precision"],
        "cosine_recall": at["recall"],
    }
