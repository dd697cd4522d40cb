"""The decision gate's classifier as a :class:`~memory_kernel.eval.fittable.Fittable`.

Cross-validation of the gate fits what the library ships: the decision classifier's weights
(logistic regression over the speech-act features, ``l2`` fixed at 1.0 as in
``scripts/train_decision_gate.py``), trained on the training folds' responses and labels
only. Each held-out fold is then replayed through the real hooks (``pre_turn`` /
``post_turn``, every layer, the frame as given and content only) on a kernel whose
``brain.decision_classifier`` is the fold's weights, written to a temporary file, and scored
with ``gate.score`` — the same figures ``eval gate`` prints, so the dev and CV columns
compare like with like. Nothing is fitted on a held-out row; the threshold stays at the
configured ``brain.decision_threshold``.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memory_kernel.config import MemoryKernelConfig
from memory_kernel.eval import gate
from memory_kernel.eval._metrics import Metrics
from memory_kernel.eval.kernel_api import DecisionScorer, fit_decision_classifier
from memory_kernel.judges.base import Judge
from memory_kernel.protocols import Embedder

__all__ = ["FittedGate", "LearnedGate"]

L2 = 1.0


@dataclass(frozen=True, slots=True)
class FittedGate:
    """The classifier fitted on ``rows`` training rows."""

    scorer: DecisionScorer
    rows: int


class LearnedGate:
    """The decision classifier, refitted on each fold's training rows."""

    def __init__(
        self,
        embedder: Embedder,
        config: MemoryKernelConfig | None = None,
        judge: Judge | None = None,
    ) -> None:
        self._embedder = embedder
        self._config = config or MemoryKernelConfig()
        #: Reads each held-out fold's uncertain band after its replay (``gate.decide``).
        self._judge = judge

    @property
    def fitted(self) -> str:
        return (
            f"the decision classifier's weights (logistic regression over the speech-act "
            f"features, l2={L2:g}; threshold brain.decision_threshold="
            f"{self._config.brain.decision_threshold:g}), trained on the training folds"
        )

    async def prepare(self, rows: Sequence[dict[str, Any]]) -> None:
        """Nothing to share: each fold's kernel run depends on its own weights."""

    async def fit(self, train: Sequence[dict[str, Any]]) -> FittedGate:
        scorer = fit_decision_classifier(
            [str(r["response_text"]) for r in train],
            [r["label"] == "decision" for r in train],
            l2=L2,
        )
        return FittedGate(scorer, len(train))

    async def evaluate(self, rows: Sequence[dict[str, Any]], params: FittedGate) -> Metrics:
        with tempfile.TemporaryDirectory(prefix="mk-gate-") as tmp:
            weights = Path(tmp) / "decision_scorer.json"
            weights.write_text(json.dumps(params.scorer.to_json()), encoding="utf-8")
            config = _with_classifier(self._config, weights)
            decisions = await gate.decide(rows, self._embedder, config, self._judge)
        return gate.score(rows, decisions)

    def describe(self, params: FittedGate) -> str:
        top = sorted(params.scorer.weights.items(), key=lambda kv: -abs(kv[1]))[:3]
        shown = ", ".join(f"{name} {weight:+.1f}" for name, weight in top)
        return f"{params.rows} rows; {shown}"


def _with_classifier(config: MemoryKernelConfig, path: Path) -> MemoryKernelConfig:
    brain = config.brain.model_validate(
        {**config.brain.model_dump(), "decision_classifier": str(path)}
    )
    return config.model_copy(update={"brain": brain})
