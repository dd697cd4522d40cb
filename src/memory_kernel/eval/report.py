"""What every evaluation suite returns, and how it is printed and saved."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import Field, computed_field
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from memory_kernel.eval.targets import verdicts
from memory_kernel.models.base import OutputModel

__all__ = [
    "CrossValidation",
    "FoldStats",
    "SuiteReport",
    "print_report",
    "print_summary",
    "write_json",
]

_SHOWN = {True: "[green]met[/]", False: "[red]missed[/]", None: "[dim]n/a[/]"}


class FoldStats(OutputModel):
    """One metric over the held-out folds (folds that cannot measure it are left out)."""

    mean: float
    min: float
    max: float
    folds: list[float | int]  # per fold, in fold order


class CrossValidation(OutputModel):
    """``eval --folds K``: each fold held out once, the classifier fitted on the others."""

    folds: int
    seed: int
    stratified_by: str
    fitted: str  # what fit chooses on the training folds
    metrics: dict[str, FoldStats] = Field(default_factory=dict)

    def means(self) -> dict[str, float]:
        return {name: stats.mean for name, stats in self.metrics.items()}


class SuiteReport(OutputModel):
    """One suite's result: headline metrics, optional per-row tables and notes."""

    suite: str
    data: str
    embedder: str
    metrics: dict[str, float | int] = Field(default_factory=dict)
    # Named tables, e.g. {"confusion": [{"label": "noise", "recorded": 0, ...}, ...]}.
    tables: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)
    # Per-row results kept in the JSON only (not printed), e.g. one row per question.
    details: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)
    targets: dict[str, str] = Field(default_factory=dict)
    # Wall-clock seconds of the run (set by the CLI); the only field that varies between
    # two runs of a suite with the hashing embedder.
    elapsed_s: float | None = None
    # Cross-validated figures beside the development (all-rows) ones in ``metrics``.
    cv: CrossValidation | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def verdicts(self) -> dict[str, bool | None]:
        """Per target: met (true), missed (false) or not checkable (null)."""
        return verdicts(self.metrics, self.targets)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def cv_verdicts(self) -> dict[str, bool | None]:
        """Per target, judged on the cross-validated mean (empty without ``cv``)."""
        return {} if self.cv is None else verdicts(self.cv.means(), self.targets)


def _metrics_table(report: SuiteReport) -> Table:
    if report.cv is not None:
        return _cv_table(report, report.cv)
    summary = Table(title=f"eval {report.suite} — embedder {report.embedder}")
    summary.add_column("metric", style="bold")
    summary.add_column("value", justify="right")
    checks = report.verdicts
    if checks:
        summary.add_column("target")
        summary.add_column("")
    for name, value in report.metrics.items():
        row = [escape(name), _cell(value)]
        if checks:
            target = report.targets.get(name)
            row += [target or "", _SHOWN[checks[name]] if target else ""]
        summary.add_row(*row)
    return summary


def _cv_table(report: SuiteReport, cv: CrossValidation) -> Table:
    """Development figure and cross-validated mean (min, max) side by side, with targets."""
    title = (
        f"eval {report.suite} — embedder {report.embedder} — dev (all rows) and "
        f"{cv.folds}-fold cross-validation (held-out folds, seed {cv.seed})"
    )
    summary = Table(title=title)
    summary.add_column("metric", style="bold", overflow="fold")  # the one column that may wrap
    for name in ("dev", "CV mean", "CV min-max"):
        summary.add_column(name, justify="right", no_wrap=True)
    for name in ("target", "dev", "CV"):
        summary.add_column(name, no_wrap=True)
    dev_checks, cv_checks = report.verdicts, report.cv_verdicts
    names = list(report.metrics) + [n for n in cv.metrics if n not in report.metrics]
    for name in names:
        stats = cv.metrics.get(name)
        target = report.targets.get(name)
        summary.add_row(
            escape(name),
            _short(report.metrics[name]) if name in report.metrics else "",
            _short(stats.mean) if stats else "",
            f"{_short(stats.min)}-{_short(stats.max)}" if stats else "",
            target or "",
            _SHOWN[dev_checks[name]] if target else "",
            _SHOWN[cv_checks[name]] if target else "",
        )
    return summary


def print_summary(report: SuiteReport, console: Console) -> None:
    """One line: how many targets were met."""
    checks = list(report.verdicts.values())
    took = f" in {report.elapsed_s:.1f} s" if report.elapsed_s is not None else ""
    if "best_threshold" in report.metrics:  # a threshold sweep
        best = {k: v for k, v in report.metrics.items() if k.startswith("best_")}
        shown = ", ".join(f"{k.removeprefix('best_')} {v:g}" for k, v in best.items())
        console.print(f"[bold]{report.suite}[/]: best {shown}{took}")
        return
    if not checks:
        console.print(f"[bold]{report.suite}[/]: no targets for this data set{took}")
        return
    line = f"[bold]{report.suite}[/]: " + _met(checks, "dev" if report.cv else "")
    if report.cv is not None:
        line += " · " + _met(list(report.cv_verdicts.values()), f"{report.cv.folds}-fold CV")
    console.print(line + took)


def _met(checks: list[bool | None], label: str) -> str:
    met, missed = checks.count(True), checks.count(False)
    colour = "green" if not missed else "red"
    shown = f"{label} " if label else ""
    return f"{shown}[{colour}]{met}/{len(checks)} targets met[/]" + (
        f", {missed} missed" if missed else ""
    )


def print_report(report: SuiteReport, console: Console) -> None:
    console.print(_metrics_table(report))
    for title, rows in report.tables.items():
        if not rows:
            continue
        table = Table(title=title)
        for column in rows[0]:
            table.add_column(escape(str(column)))
        for row in rows:
            table.add_row(*(_cell(v) for v in row.values()))
        console.print(table)
    for note in report.notes:
        console.print(f"[dim]note:[/] {escape(note)}")
    console.print(f"[dim]data: {report.data}[/]")
    print_summary(report, console)


def _short(value: float) -> str:
    """A figure in at most 4 significant digits (0.3778, 8.2, 110)."""
    return f"{value:.4g}" if abs(value) < 10_000 else f"{value:.0f}"


def _cell(value: Any) -> str:
    """A table cell: floats to 4 places, text shown as is (never read as rich markup); a
    metric that does not apply to the row is a dash."""
    if value is None:
        return "–"
    return f"{value:.4f}" if isinstance(value, float) else escape(str(value))


def write_json(report: SuiteReport, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report.model_dump(mode="json"), indent=2) + "\n", encoding="utf-8")
