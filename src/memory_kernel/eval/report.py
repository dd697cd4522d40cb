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

__all__ = ["SuiteReport", "print_report", "print_summary", "write_json"]

_SHOWN = {True: "[green]met[/]", False: "[red]missed[/]", None: "[dim]n/a[/]"}


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

    @computed_field  # type: ignore[prop-decorator]
    @property
    def verdicts(self) -> dict[str, bool | None]:
        """Per target: met (true), missed (false) or not checkable (null)."""
        return verdicts(self.metrics, self.targets)


def _metrics_table(report: SuiteReport) -> Table:
    summary = Table(title=f"eval {report.suite} — embedder {report.embedder}")
    summary.add_column("metric", style="bold")
    summary.add_column("value", justify="right")
    checks = report.verdicts
    if checks:
        summary.add_column("target")
        summary.add_column("")
    for name, value in report.metrics.items():
        row = [name, _cell(value)]
        if checks:
            target = report.targets.get(name)
            row += [target or "", _SHOWN[checks[name]] if target else ""]
        summary.add_row(*row)
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
    met, missed = checks.count(True), checks.count(False)
    colour = "green" if not missed else "red"
    console.print(
        f"[bold]{report.suite}[/]: [{colour}]{met}/{len(checks)} targets met[/]"
        + (f", {missed} missed" if missed else "")
        + took
    )


def print_report(report: SuiteReport, console: Console) -> None:
    console.print(_metrics_table(report))
    for title, rows in report.tables.items():
        if not rows:
            continue
        table = Table(title=title)
        for column in rows[0]:
            table.add_column(str(column))
        for row in rows:
            table.add_row(*(_cell(v) for v in row.values()))
        console.print(table)
    for note in report.notes:
        console.print(f"[dim]note:[/] {escape(note)}")
    console.print(f"[dim]data: {report.data}[/]")
    print_summary(report, console)


def _cell(value: Any) -> str:
    if value is None:  # a metric that does not apply to the row
        return "–"
    return f"{value:.4f}" if isinstance(value, float) else str(value)


def write_json(report: SuiteReport, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report.model_dump(mode="json"), indent=2) + "\n", encoding="utf-8")
