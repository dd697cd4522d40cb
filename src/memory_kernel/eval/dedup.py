"""Dedup: is a second statement merged into the first (reinforced) or stored apart?

Reads either the project's pairs JSONL (``{"id", "a", "b", "label"}``, optionally ``kind``:
paraphrase, negation, value_change, ...) or the MRPC TSV (``Quality, #1 ID, #2 ID, #1 String,
#2 String``) — detected from the file. Each pair is learned (a, then b) by
``kernel.heart.facts`` in an agent of its own (so a pair's decision does not depend on the
other pairs), as explicit facts so the admission gate does not interfere; b being REINFORCED
is the dedup decision. With kinds, accuracy is also given per kind (``accuracy.<kind>``). For
MRPC it also reports the ROC AUC of the raw cosine and P/R of the cosine alone at the
configured threshold.
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from memory_kernel.config import MemoryKernelConfig
from memory_kernel.errors import ConfigError, EmbedderError
from memory_kernel.eval._metrics import Metrics, binary_metrics, roc_auc
from memory_kernel.eval.kernel_api import (
    FactInput,
    LearnAction,
    LearnOutcome,
    MemoryKernel,
    embed_checked,
)
from memory_kernel.eval.progress import progress
from memory_kernel.eval.report import SuiteReport
from memory_kernel.eval.store import eval_kernel
from memory_kernel.eval.targets import targets_for
from memory_kernel.judges.base import Judge
from memory_kernel.protocols import Embedder

__all__ = [
    "Pair", "cosines", "decide", "learn_pairs", "load_pairs", "merged", "pair_agent", "run",
    "score",
]  # fmt: skip


class Pair(NamedTuple):
    id: str
    a: str
    b: str
    same: bool  # the gold label: b says the same as a (merge it)
    kind: str = ""  # paraphrase, negation, ... ("" when the file has none)


_CHUNK = 100  # pairs per learn_many call: a progress step, and bounded transactions


def _jsonl(text: str) -> list[Pair]:
    pairs = []
    for line in text.splitlines():
        if line.strip():
            row = json.loads(line)
            same = bool(int(row["label"]))
            kind = str(row.get("kind") or "")
            pairs.append(Pair(str(row["id"]), str(row["a"]), str(row["b"]), same, kind))
    return pairs


def _mrpc(text: str) -> list[Pair]:
    reader = csv.reader(text.lstrip("\ufeff").splitlines(), delimiter="\t", quoting=csv.QUOTE_NONE)
    pairs = []
    for row in reader:
        if len(row) >= 5 and row[0].strip() in ("0", "1"):
            pairs.append(Pair(f"{row[1]}-{row[2]}", row[3], row[4], row[0].strip() == "1"))
    return pairs


def load_pairs(path: Path) -> tuple[str, list[Pair]]:
    """``("pairs" | "mrpc", pairs)``; the format is told by the first line."""
    try:
        text = path.read_text("utf-8")
        kind = "pairs" if text.lstrip("\ufeff").lstrip().startswith("{") else "mrpc"
        pairs = _jsonl(text) if kind == "pairs" else _mrpc(text)
    except (OSError, ValueError, KeyError) as exc:
        raise ConfigError(f"cannot read dedup pairs from {path}: {exc}") from exc
    ids = Counter(p.id for p in pairs)
    if len(ids) != len(pairs):
        raise ConfigError(f"{path}: duplicate ids {[k for k, v in ids.items() if v > 1][:5]}")
    return kind, pairs


async def decide(
    pairs: Sequence[Pair], embedder: Embedder, *, config: MemoryKernelConfig | None = None
) -> list[LearnOutcome]:
    """Learn each pair (a, then b) in an agent of its own; the outcomes of the b's."""
    async with eval_kernel(embedder, config=config) as kernel:
        return await learn_pairs(kernel, pairs, embedder)


def pair_agent(n: int) -> str:
    """The agent the ``n``-th pair is learned in."""
    return f"dd-{n}"


async def learn_pairs(
    kernel: MemoryKernel, pairs: Sequence[Pair], embedder: Embedder
) -> list[LearnOutcome]:
    """:func:`decide` on an open kernel."""
    outcomes: list[LearnOutcome] = []
    with progress("dedup pairs", len(pairs)) as advance:
        for start in range(0, len(pairs), _CHUNK):
            batch: list[FactInput] = []
            for n, pair in enumerate(pairs[start : start + _CHUNK], start):
                agent = pair_agent(n)
                batch += [FactInput(agent_id=agent, content=pair.a, explicit=True),
                          FactInput(agent_id=agent, content=pair.b, explicit=True)]  # fmt: skip
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


def merged(outcomes: Sequence[LearnOutcome]) -> list[bool]:
    """The dedup decision of each pair: b was merged into a."""
    return [o.action is LearnAction.REINFORCED for o in outcomes]


def _by_kind(pairs: Sequence[Pair], merges: Sequence[bool]) -> list[dict[str, Any]]:
    table: dict[str, dict[str, Any]] = {}
    for pair, merge in zip(pairs, merges, strict=True):
        label = "same" if pair.same else "apart"
        row = table.setdefault(
            pair.kind, {"kind": pair.kind, "label": label, "pairs": 0, "merged": 0, "correct": 0}
        )
        row["pairs"] += 1
        row["merged"] += merge
        row["correct"] += merge == pair.same
    for row in table.values():
        row["accuracy"] = round(row["correct"] / row["pairs"], 4)
    return sorted(table.values(), key=lambda r: (r["label"], r["kind"]))


def score(pairs: Sequence[Pair], merges: Sequence[bool]) -> Metrics:
    """Dedup metrics of ``pairs`` given which were merged (pure); positive = merged."""
    decision = binary_metrics(merges, [p.same for p in pairs])
    metrics: Metrics = {
        "pairs": len(pairs),
        "precision": decision["precision"],
        "recall": decision["recall"],
        "accuracy": decision["accuracy"],
        "f1": decision["f1"],
        "negatives_merged": decision["fp"],
        "positives_apart": decision["fn"],
    }
    if any(p.kind for p in pairs):
        for row in _by_kind(pairs, merges):
            metrics[f"accuracy.{row['kind']}"] = row["accuracy"]
    return metrics


async def run(
    data: Path, embedder: Embedder, *, config: MemoryKernelConfig | None = None,
    judge: str | Judge | None = None,
) -> SuiteReport:  # fmt: skip
    """The suite; with ``judge`` (``openai:<model>@<base_url>``, or a judge object), each pair
    ``learn`` kept apart is then consolidated with that judge (``eval/dedup_judge.py``)."""
    kind, pairs = load_pairs(data)
    if not pairs:
        raise ConfigError(f"no dedup pairs in {data}")
    notes = [f"format: {kind}; decision = second statement reinforced the first"]
    asked: Metrics = {}
    if judge is None:
        outcomes = await decide(pairs, embedder, config=config)
        merges = merged(outcomes)
    else:
        from memory_kernel.eval.dedup_judge import JUDGED_NOTE, decide_judged

        outcomes, merges, log = await decide_judged(pairs, embedder, judge, config=config)
        asked = log.counts
        notes += [JUDGED_NOTE, *log.notes()]
    metrics: Metrics = {**score(pairs, merges), **asked}
    errors = [
        {"id": p.id, "kind": p.kind, "label": int(p.same), "decision": o.action.value,
         "reason": o.reason}
        for p, o, m in zip(pairs, outcomes, merges, strict=True)
        if m != p.same
    ]  # fmt: skip
    tables = {"errors": errors}
    targets = targets_for("dedup", metrics)
    if kind == "mrpc":
        metrics.update(await _cosine_metrics(pairs, embedder, config or MemoryKernelConfig()))
        targets = {}
        tables = {"errors": [{k: v for k, v in e.items() if k != "kind"} for e in errors[:25]]}
    elif any(p.kind for p in pairs):
        tables = {"per kind": _by_kind(pairs, merges), **tables}
    return SuiteReport(
        suite="dedup",
        data=str(data),
        embedder=embedder.name,
        metrics=metrics,
        tables=tables,
        notes=notes,
        targets=targets,
    )


async def cosines(pairs: Sequence[Pair], embedder: Embedder) -> list[float]:
    """The raw cosine of each pair (the vectors are unit length)."""
    left = await embed_checked(embedder, [p.a for p in pairs], timeout=None)
    right = await embed_checked(embedder, [p.b for p in pairs], timeout=None)
    return [float(c) for c in np.einsum("ij,ij->i", left, right)]


async def _cosine_metrics(
    pairs: Sequence[Pair], embedder: Embedder, config: MemoryKernelConfig
) -> Metrics:
    threshold = config.heart.fact_dedup_similarity
    scores = await cosines(pairs, embedder)
    gold = [p.same for p in pairs]
    at = binary_metrics([c >= threshold for c in scores], gold)
    return {
        "cosine_roc_auc": round(roc_auc(scores, gold), 4),
        "cosine_threshold": threshold,
        "cosine_precision": at["precision"],
        "cosine_recall": at["recall"],
    }
