"""What cross-validation fits and evaluates.

A :class:`Fittable` is a classifier of a suite's rows that can be fitted on some rows and
evaluated on others. Cross-validation (``eval/cv.py``) calls, for a file of rows:

1. ``prepare(rows)`` once with every row: work that does not look at labels (running the
   kernel, embedding texts, computing features), so folds can share it;
2. per fold, ``fit(train_rows) -> params`` on the other folds, then
   ``evaluate(held_out_rows, params) -> metrics`` on the held-out fold;
3. ``describe(params)`` for the report (what was chosen).

Two implementations cover today's rule-based classifiers:

- :class:`FixedClassifier`: nothing to fit (fact admission, knowledge update); every fold
  is scored with the fixed rules, which still shows the variance across folds.
- :class:`ThresholdClassifier`: one config threshold chosen on the training folds over the
  ``memory-kernel tune`` grid (same objective, same "middle of the widest plateau" rule).

Both run the kernel once per configuration over all rows in ``prepare`` and score subsets
afterwards. That is valid because every quality suite runs each row in an agent or session
of its own, so a row's outcome does not depend on which other rows are present.

A learned scorer plugs in as a third implementation without touching the harness, e.g.
logistic regression over embeddings and cheap text features: ``prepare`` embeds every row
and computes its features, ``fit`` trains on the training rows' features and labels and
returns the weights, ``evaluate`` predicts the held-out rows and scores the predictions with
the suite's own pure ``score`` function (``gate.score``, ``admission.score``,
``dedup.score``, ``ku.score``), so its figures are comparable with the rules'.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from memory_kernel.config import MemoryKernelConfig
from memory_kernel.eval._metrics import Metrics
from memory_kernel.eval.progress import progress
from memory_kernel.eval.sweep import best_value, override

__all__ = [
    "Fittable",
    "FixedClassifier",
    "NoParams",
    "SuiteRules",
    "Threshold",
    "ThresholdClassifier",
]

Row = TypeVar("Row")
Decision = TypeVar("Decision")
RowIn = TypeVar("RowIn", contravariant=True)
Params = TypeVar("Params")


class Fittable(Protocol[RowIn, Params]):
    """A classifier cross-validation can fit on some rows and evaluate on others."""

    @property
    def fitted(self) -> str:
        """What ``fit`` chooses, in words, for the report."""
        ...

    async def prepare(self, rows: Sequence[RowIn]) -> None:
        """Label-free work on every row of the file, once, before any fit."""
        ...

    async def fit(self, train: Sequence[RowIn]) -> Params:
        """The parameters that do best on ``train`` (labels may be read here)."""
        ...

    async def evaluate(self, rows: Sequence[RowIn], params: Params) -> Metrics:
        """The suite's metrics of ``rows`` with ``params`` (rows seen by ``prepare``)."""
        ...

    def describe(self, params: Params) -> str:
        """``params`` in one short line."""
        ...


@dataclass(frozen=True, slots=True)
class SuiteRules(Generic[Row, Decision]):
    """How a suite runs its classifier and scores the result.

    ``decide`` runs the kernel with a configuration over rows and returns one decision per
    row; ``score`` turns rows and their decisions into the suite's metrics (pure); ``key``
    names a row uniquely within its file.
    """

    decide: Callable[[Sequence[Row], MemoryKernelConfig], Awaitable[list[Decision]]]
    score: Callable[[Sequence[Row], Sequence[Decision]], Metrics]
    key: Callable[[Row], str]


class _Decided(Generic[Row, Decision]):
    """Decisions of every row under each configuration, looked up by row key."""

    def __init__(self, rules: SuiteRules[Row, Decision]) -> None:
        self.rules = rules
        self._by: dict[float, dict[str, Decision]] = {}

    async def run(self, setting: float, rows: Sequence[Row], config: MemoryKernelConfig) -> None:
        decisions = await self.rules.decide(rows, config)
        self._by[setting] = {self.rules.key(r): d for r, d in zip(rows, decisions, strict=True)}

    def at(self, setting: float, rows: Sequence[Row]) -> list[Decision]:
        chosen = self._by[setting]
        return [chosen[self.rules.key(row)] for row in rows]


@dataclass(frozen=True, slots=True)
class NoParams:
    """A fixed classifier's parameters: none."""


class FixedClassifier(Generic[Row, Decision]):
    """A classifier without a tunable parameter: every fold is scored with the fixed rules."""

    fitted = "nothing (no tunable parameter): the fixed rules, scored per fold"

    def __init__(
        self, rules: SuiteRules[Row, Decision], config: MemoryKernelConfig | None = None
    ) -> None:
        self._decided = _Decided(rules)
        self._config = config or MemoryKernelConfig()

    async def prepare(self, rows: Sequence[Row]) -> None:
        await self._decided.run(0.0, rows, self._config)

    async def fit(self, train: Sequence[Row]) -> NoParams:
        return NoParams()

    async def evaluate(self, rows: Sequence[Row], params: NoParams) -> Metrics:
        return self._decided.rules.score(rows, self._decided.at(0.0, rows))

    def describe(self, params: NoParams) -> str:
        return "fixed"


@dataclass(frozen=True, slots=True)
class Threshold:
    """A threshold chosen on training rows, with the objective it reached there."""

    param: str
    value: float
    objective: str
    train_score: float


class ThresholdClassifier(Generic[Row, Decision]):
    """One config threshold, chosen per fold on the training rows over ``grid``: the value
    whose ``objective`` is highest (middle of the widest plateau, as ``memory-kernel tune``)."""

    def __init__(
        self,
        rules: SuiteRules[Row, Decision],
        *,
        param: str,
        grid: Sequence[float],
        objective: Callable[[Sequence[Row], Sequence[Decision]], float],
        objective_name: str,
        objective_detail: str = "",
        config: MemoryKernelConfig | None = None,
    ) -> None:
        self._decided = _Decided(rules)
        self._param = param
        self._grid = sorted(set(grid))
        self._objective = objective
        self._objective_name = objective_name
        self._objective_detail = objective_detail
        self._config = config or MemoryKernelConfig()

    @property
    def fitted(self) -> str:
        shown = ", ".join(f"{v:g}" for v in self._grid)
        about = f" ({self._objective_detail})" if self._objective_detail else ""
        return (
            f"{self._param} maximising {self._objective_name}{about} on the training folds, "
            f"over {shown}"
        )

    async def prepare(self, rows: Sequence[Row]) -> None:
        with progress(f"running every value of {self._param}", len(self._grid)) as advance:
            for value in self._grid:
                config = override(self._config, self._param, value)
                await self._decided.run(value, rows, config)
                advance(1)

    async def fit(self, train: Sequence[Row]) -> Threshold:
        scores = [self._objective(train, self._decided.at(v, train)) for v in self._grid]
        best = best_value(self._grid, scores)
        score = scores[self._grid.index(best)]
        return Threshold(self._param, best, self._objective_name, round(score, 4))

    async def evaluate(self, rows: Sequence[Row], params: Threshold) -> Metrics:
        return self._decided.rules.score(rows, self._decided.at(params.value, rows))

    def describe(self, params: Threshold) -> str:
        name = params.param.rpartition(".")[2]
        edge = " (grid edge)" if params.value in (self._grid[0], self._grid[-1]) else ""
        return f"{name}={params.value:g}{edge}, train {params.objective} {params.train_score:g}"
