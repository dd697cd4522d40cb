"""Fact admission: precision / recall / F1 of admit-vs-reject on labelled candidate facts.

Every candidate is learned through ``kernel.heart.facts`` (own agent each, not explicit), so
the number measures the real gate, not a copy of it.
"""

from __future__ import annotations

import json
from pathlib import Path

from memory_kernel.config import MemoryKernelConfig
from memory_kernel.errors import ConfigError
from memory_kernel.eval._metrics import binary_metrics
from memory_kernel.eval.report import SuiteReport
from memory_kernel.eval.store import eval_kernel
from memory_kernel.models.facts import FactInput, LearnAction
from memory_kernel.protocols import Embedder

__all__ = ["load_rows", "run"]


def load_rows(path: Path) -> list[dict[str, object]]:
    try:
        rows = [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read admission data from {path}: {exc}") from exc
    for row in rows:
        if not isinstance(row, dict) or "content" not in row or "label" not in row:
            raise ConfigError(f"admission rows need content and label: {row!r}")
    return rows


async def run(
    data: Path, embedder: Embedder, *, config: MemoryKernelConfig | None = None
) -> SuiteReport:
    rows = load_rows(data)
    if not rows:
        raise ConfigError(f"no admission rows in {data}")
    inputs = [
        FactInput(
            agent_id=f"adm-{n}",
            content=str(row["content"]),
            subject=row.get("subject") if isinstance(row.get("subject"), str) else None,
            category=row.get("category") if isinstance(row.get("category"), str) else None,
        )
        for n, row in enumerate(rows)
    ]
    async with eval_kernel(embedder, config=config) as kernel:
        outcomes = await kernel.heart.facts.learn_many(inputs)
    admitted = [o.action is not LearnAction.REJECTED for o in outcomes]
    gold = [row["label"] == "admit" for row in rows]
    admit = binary_metrics(admitted, gold)
    reject = binary_metrics([not a for a in admitted], [not g for g in gold])
    wrong = [
        {"id": row.get("id", n), "label": row["label"], "decision": o.action.value,
         "reason": o.reason, "content": row["content"]}
        for n, (row, o, a, g) in enumerate(zip(rows, outcomes, admitted, gold, strict=True))
        if a != g
    ]  # fmt: skip
    return SuiteReport(
        suite="admission",
        data=str(data),
        embedder=embedder.name,
        metrics={
            "rows": len(rows),
            "precision": admit["precision"],
            "recall": admit["recall"],
            "f1": admit["f1"],
            "accuracy": admit["accuracy"],
            "reject_precision": reject["precision"],
            "reject_recall": reject["recall"],
            "reject_f1": reject["f1"],
        },
        tables={"errors": wrong},
        notes=["positive class = admit; reject_* treat reject as the positive class"],
        targets={"f1": ">= 0.9"},
    )
