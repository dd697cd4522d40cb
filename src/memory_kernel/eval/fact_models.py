"""Cross-validation of the learned fact scorers (admission, duplicate, update): a
:class:`~memory_kernel.eval.fittable.Fittable` that fits one scorer on the training folds,
the way ``scripts/train_fact_scorers.py`` fits the shipped one, and scores the held-out
fold by running the kernel with it (``HeartConfig.fact_scorer_dir``).

The training folds are completed with the other development files the shipped scorer
learns from (found beside the data file, ``<dev>/<folder>/<file>``), never with the file
being cross-validated: a fold's held-out rows are never seen by its fit.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Generic, TypeVar

from memory_kernel.config import MemoryKernelConfig
from memory_kernel.eval._metrics import Metrics
from memory_kernel.eval.fact_training import DevData, LabelledPair, admission_scorer, fit_pairs
from memory_kernel.eval.fittable import SuiteRules
from memory_kernel.eval.kernel_api import LinearScorer
from memory_kernel.protocols import Embedder

__all__ = ["Fitted", "ScorerClassifier", "admission_fit", "pair_fit"]

Row = TypeVar("Row")
Decision = TypeVar("Decision")
#: What one fold fits: one scorer, or several (the ``ku`` suite fits the update scorer and
#: the read scorer), each written as ``<name>.json`` for the kernel to load.
Fitted = tuple[LinearScorer, ...]


class ScorerClassifier(Generic[Row, Decision]):
    """One learned scorer fitted per fold (``fit_rows``) and run through the kernel."""

    def __init__(
        self, rules: SuiteRules[Row, Decision], *, name: str,
        fit_rows: Callable[[Sequence[Row]], Awaitable[Fitted]], note: str,
        config: MemoryKernelConfig | None = None,
    ) -> None:  # fmt: skip
        self._rules = rules
        self._name = name
        self._fit_rows = fit_rows
        self._config = config or MemoryKernelConfig()
        self.fitted = f"the {name} scorer (logistic regression) on the training folds {note}"

    async def prepare(self, rows: Sequence[Row]) -> None:
        return None

    async def fit(self, train: Sequence[Row]) -> Fitted:
        return await self._fit_rows(train)

    async def evaluate(self, rows: Sequence[Row], params: Fitted) -> Metrics:
        with tempfile.TemporaryDirectory(prefix="mk-scorer-") as folder:
            for scorer in params:
                doc = scorer.to_json()
                (Path(folder) / f"{scorer.name}.json").write_text(json.dumps(doc), "utf-8")
            config = _with_dir(self._config, folder)
            decisions = await self._rules.decide(rows, config)
        return self._rules.score(rows, decisions)

    def describe(self, params: Fitted) -> str:
        described = []
        for scorer in params:
            trained = scorer.trained_on
            size = trained.get("pairs", trained.get("rows", "?"))
            cut = "".join(f", {k} {v:g}" for k, v in scorer.thresholds.items())
            positives = trained.get("positives", "?")
            described.append(f"{scorer.name}: {size} rows ({positives} positive){cut}")
        return "; ".join(described)


def _with_dir(config: MemoryKernelConfig, folder: str) -> MemoryKernelConfig:
    heart = config.heart.model_copy(update={"fact_scorer_dir": folder})
    return config.model_copy(update={"heart": heart})


def pair_fit(
    kinds: Sequence[str], data: Path, embedder: Embedder, labelled: Callable[[Row], LabelledPair]
) -> tuple[Callable[[Sequence[Row]], Awaitable[Fitted]], str]:
    """How a fold fits the ``update``, ``duplicate`` or ``read`` scorers (``kinds``): on
    its training rows plus the other development files; and a note on what those are."""
    rest = DevData.read(data.parent.parent, exclude=data)

    async def fit_rows(train: Sequence[Row]) -> Fitted:
        pairs = [*(labelled(row) for row in train), *rest.pairs]
        sources = [data.name, *rest.files]
        return tuple([await fit_pairs(kind, pairs, embedder, sources) for kind in kinds])

    return fit_rows, _note(rest)


def admission_fit(
    data: Path, text_label: Callable[[Row], tuple[str, bool]]
) -> tuple[Callable[[Sequence[Row]], Awaitable[Fitted]], str]:
    """How a fold fits the admission scorer: its training rows, the other admission file
    and the statements of the pair files (all facts worth keeping)."""
    from memory_kernel.eval.fact_training import statements_of

    rest = DevData.read(data.parent.parent, exclude=data)
    extra = [*rest.admission, *statements_of(rest.pairs)]

    async def fit_rows(train: Sequence[Row]) -> Fitted:
        return (admission_scorer([*(text_label(row) for row in train), *extra], rest.files),)

    return fit_rows, _note(rest)


def _note(rest: DevData) -> str:
    if not rest.files:
        return "(no other development file found beside the data file)"
    return f"plus {', '.join(rest.files)}"
