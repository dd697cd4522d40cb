"""Fact admission: precision / recall / F1 of admit-vs-reject on labelled candidate facts.

Every candidate is learned through ``kernel.heart.facts`` (own agent each, not explicit), so
the number measures the real gate, not a copy of it, and a row's decision does not depend
on the other rows. Rows: ``{"id", "content", "subject", "category", "label"}`` with
``label`` ``admit`` or ``reject`` (extra fields such as ``why`` are ignored).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from memory_kernel.config import MemoryKernelConfig
from memory_kernel.errors import ConfigError
from memory_kernel.eval._metrics import Metrics, binary_metrics
from memory_kernel.eval.kernel_api import FactInput, LearnAction, LearnOutcome
from memory_kernel.eval.report import SuiteReport
from memory_kernel.eval.store import eval_kernel
from memory_kernel.eval.targets import targets_for
from memory_kernel.protocols import Embedder

__all__ = ["decide", "learn", "load_rows", "run", "score"]

Row = dict[str, object]
_LABELS = ("admit", "reject")


def load_rows(path: Path) -> list[Row]:
    try:
        rows = [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read admission data from {path}: {exc}") from exc
    for n, row in enumerate(rows):
        if not isinstance(row, dict) or "content" not in row or row.get("label") not in _LABELS:
            raise ConfigError(f"admission rows need content and label {_LABELS}: {row!r}")
        row.setdefault("id", n)
    ids = Counter(str(row["id"]) for row in rows)
    if len(ids) != len(rows):
        raise ConfigError(f"{path}: duplicate ids {[k for k, v in ids.items() if v > 1][:5]}")
    return rows


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


async def learn(
    rows: Sequence[Row], embedder: Embedder, config: MemoryKernelConfig | None = None
) -> list[LearnOutcome]:
    """Learn every row as a candidate fact of an agent of its own, on a fresh kernel."""
    inputs = [
        FactInput(
            agent_id=f"adm-{n}",
            content=str(row["content"]),
            subject=_text(row.get("subject")),
            category=_text(row.get("category")),
        )
        for n, row in enumerate(rows)
    ]
    async with eval_kernel(embedder, config=config) as kernel:
        return await kernel.heart.facts.learn_many(inputs)


async def decide(
    rows: Sequence[Row], embedder: Embedder, config: MemoryKernelConfig | None = None
) -> list[bool]:
    """Whether each row was admitted."""
    return [o.action is not LearnAction.REJECTED for o in await learn(rows, embedder, config)]


def score(rows: Sequence[Row], admitted: Sequence[bool]) -> Metrics:
    """Admit-vs-reject metrics of ``rows`` given what was admitted (pure)."""
    gold = [row["label"] == "admit" for row in rows]
    admit = binary_metrics(admitted, gold)
    reject = binary_metrics([not a for a in admitted], [not g for g in gold])
    return {
        "rows": len(rows),
        "precision": admit["precision"],
        "recall": admit["recall"],
        "f1": admit["f1"],
        "accuracy": admit["accuracy"],
        "reject_precision": reject["precision"],
        "reject_recall": reject["recall"],
        "reject_f1": reject["f1"],
    }


async def run(
    data: Path, embedder: Embedder, *, config: MemoryKernelConfig | None = None
) -> SuiteReport:
    rows = load_rows(data)
    if not rows:
        raise ConfigError(f"no admission rows in {data}")
    outcomes = await learn(rows, embedder, config)
    admitted = [o.action is not LearnAction.REJECTED for o in outcomes]
    metrics = score(rows, admitted)
    wrong = [
        {"id": row["id"], "label": row["label"], "decision": o.action.value,
         "reason": o.reason, "content": row["content"]}
        for row, o, a in zip(rows, outcomes, admitted, strict=True)
        if a != (row["label"] == "admit")
    ]  # fmt: skip
    return SuiteReport(
        suite="admission",
        data=str(data),
        embedder=embedder.name,
        metrics=metrics,
        tables={"errors": wrong},
        notes=["positive class = admit; reject_* treat reject as the positive class"],
        targets=targets_for("admission", metrics),
    )
