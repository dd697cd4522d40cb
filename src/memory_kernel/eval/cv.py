"""Cross-validation behind ``memory-kernel eval SUITE --data FILE --folds K [--seed S]``.

The rows are split into K stratified folds (:func:`~memory_kernel.eval.folds.stratified_folds`,
by label; deterministic by seed). For each fold the suite's :class:`Fittable` is fitted on
the other folds and evaluated on the held-out one; the report gives the mean, min and max of
every metric over the folds beside the development figure (the suite run on all rows with
today's configuration) and judges both against the issue 21 targets.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from memory_kernel.errors import ConfigError
from memory_kernel.eval._metrics import Metrics
from memory_kernel.eval.fittable import Fittable
from memory_kernel.eval.folds import check_folds, stratified_folds
from memory_kernel.eval.nightly import judge_opened
from memory_kernel.eval.progress import progress
from memory_kernel.eval.report import CrossValidation, FoldStats, SuiteReport
from memory_kernel.eval.store import eval_server
from memory_kernel.eval.suites import JUDGED_CV, load_suite
from memory_kernel.protocols import Embedder

if TYPE_CHECKING:
    from memory_kernel.config import MemoryKernelConfig
    from memory_kernel.judges.base import Judge

__all__ = ["CvSetup", "cross_validate", "run_cv", "summarise"]

Row = TypeVar("Row")
Params = TypeVar("Params")


@dataclass(frozen=True, slots=True)
class CvSetup(Generic[Row, Params]):
    """A suite's rows, the label each is stratified by, and the classifier to fit."""

    rows: Sequence[Row]
    labels: Sequence[str]
    model: Fittable[Row, Params]
    stratified_by: str


def summarise(per_fold: Sequence[Metrics]) -> dict[str, FoldStats]:
    """Mean, min and max of every metric over the folds that have it (first-seen order)."""
    names = list(dict.fromkeys(name for metrics in per_fold for name in metrics))
    summary = {}
    for name in names:
        values = [metrics[name] for metrics in per_fold if name in metrics]
        summary[name] = FoldStats(
            mean=round(sum(values) / len(values), 4),
            min=min(values),
            max=max(values),
            folds=values,
        )
    return summary


async def cross_validate(
    setup: CvSetup[Row, Params], *, folds: int, seed: int, shown: Sequence[str] = ()
) -> tuple[dict[str, FoldStats], list[dict[str, Any]]]:
    """Fit on K-1 folds, evaluate the held-out fold, K times: the summary of the held-out
    metrics and a table with a row per fold (its sizes, what was fitted, the ``shown``
    metrics)."""
    rows, model = setup.rows, setup.model
    held = stratified_folds(setup.labels, folds, seed)
    await model.prepare(rows)
    per_fold: list[Metrics] = []
    table: list[dict[str, Any]] = []
    with progress(f"cross-validating ({folds} folds)", folds) as advance:
        for number, fold in enumerate(held, 1):
            out = set(fold)
            train = [row for i, row in enumerate(rows) if i not in out]
            params = await model.fit(train)
            metrics = await model.evaluate([rows[i] for i in fold], params)
            per_fold.append(metrics)
            table.append({
                "fold": number, "train rows": len(train), "held out": len(fold),
                "fitted": model.describe(params),
                **{name: metrics[name] for name in shown if name in metrics},
            })  # fmt: skip
            advance(1)
    return summarise(per_fold), table


def _setup(
    suite: str, data: Path, embedder: Embedder, options: dict[str, Any]
) -> CvSetup[Any, Any]:
    from memory_kernel.eval.cv_suites import SETUPS

    make = SETUPS.get(suite)
    if make is None:
        raise ConfigError(
            f"--folds: {suite} has no classifier of rows to cross-validate; "
            f"use one of {', '.join(sorted(SETUPS))}"
        )
    return make(data, embedder, **options)


def _check_judged(suite: str) -> None:
    if suite not in JUDGED_CV:
        raise ConfigError(
            f"--judge and --folds go together for {' and '.join(sorted(JUDGED_CV))} only, "
            f"not {suite}"
        )


async def run_cv(
    suite: str, data: Path, embedder: Embedder, *, folds: int, seed: int,
    judge: str | None = None, config: MemoryKernelConfig | None = None,
) -> SuiteReport:  # fmt: skip
    """The suite's development report with the cross-validated figures beside it; with
    ``judge`` (``openai:<model>@<base_url>``; dedup, gate and ku), both read after the nightly
    runs in which that judge answered; with ``config``, under that configuration (each
    fold's fitted weights or threshold replace its own)."""
    if judge is not None:
        _check_judged(suite)
    async with judge_opened(judge) as chosen:
        return await _run_cv(
            suite, data, embedder, folds=folds, seed=seed, judge=chosen, config=config
        )


async def _run_cv(
    suite: str, data: Path, embedder: Embedder, *, folds: int, seed: int,
    judge: Judge | None = None, config: MemoryKernelConfig | None = None,
) -> SuiteReport:  # fmt: skip
    options: dict[str, Any] = {"judge": judge, "config": config}
    options = {k: v for k, v in options.items() if v is not None}
    setup = _setup(suite, data, embedder, options)
    check_folds(folds, len(setup.rows))
    async with eval_server():
        dev = await load_suite(suite)(data, embedder, **options)
        summary, table = await cross_validate(
            setup, folds=folds, seed=seed, shown=list(dev.targets)
        )
        everything = await setup.model.fit(setup.rows)
    small = min(setup.labels.count(x) for x in set(setup.labels)) if setup.labels else 0
    notes = [
        f"cross-validation: {folds} folds stratified by {setup.stratified_by}, seed {seed}; "
        f"fitted per fold: {setup.model.fitted}",
        f"fitted on all rows (for reference, not a measurement): "
        f"{setup.model.describe(everything)}",
        "CV columns: each metric on the held-out folds (mean, min, max); counts are per fold "
        "(about 1/K of the rows), the JSON has every fold's value",
    ]
    if small < folds:
        notes.append(f"a label has only {small} rows: some folds hold none of it")
    cv = CrossValidation(
        folds=folds,
        seed=seed,
        stratified_by=setup.stratified_by,
        fitted=setup.model.fitted,
        metrics=summary,
    )
    return dev.model_copy(
        update={
            "cv": cv,
            "tables": {"cross-validation folds": table, **dev.tables},
            "notes": [*dev.notes, *notes],
        }
    )
