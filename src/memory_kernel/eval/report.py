"""What every evaluation suite returns, and how it is printed and saved."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import Field
from rich.console import Console
from rich.table import Table

from memory_kernel.models.base import OutputModel

__all__ = ["SuiteReport", "print_report", "write_json"]


class SuiteReport(OutputModel):
    """One suite's result: headline metrics, optional per-row tables and notes."""

    suite: str
    data: str
    embedder: str
    metrics: dict[str, float | int] = Field(default_factory=dict)
    # Named tables, e.g. {"confusion": [{"label": "noise", "recorded": 0, ...}, ...]}.
    tables: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)
    targets: dict[str, str] = Field(default_factory=dict)


def print_report(report: SuiteReport, console: Console) -> None:
    summary = Table(title=f"eval {report.suite} — embedder {report.embedder}")
    summary.add_column("metric", style="bold")
    summary.add_column("value", justify="right")
    summary.add_column("target")
    for name, value in report.metrics.items():
        shown = f"{value:.4f}" if isinstance(value, float) else str(value)
        summary.add_row(name, shown, report.targets.get(name, ""))
    console.print(summary)
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
        console.print(f"[dim]note:[/] {note}")
    console.print(f"[dim]data: {report.data}[/]")


def _cell(value: Any) -> str:
    return f"{value:.4f}" if isinstance(value, float) else str(value)


def write_json(report: SuiteReport, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report.model_dump(mode="json"), indent=2) + "\n", encoding="utf-8")
