"""PNG plots of evaluation reports (matplotlib, the optional ``plot`` extra).

- ``locomo``: evidence recall of the budgeted context against the tokens it used, through the
  measured budgets, next to the naive context's single point (everything, no budget).
- a threshold sweep (``memory-kernel tune``): precision, recall and F1 against the threshold,
  with the best value and the configured default marked.

Other reports have no curve: :func:`check_plottable` refuses them before the suite runs.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from memory_kernel.errors import ConfigError
from memory_kernel.eval.report import SuiteReport

__all__ = ["PlotUnavailableError", "check_plottable", "plot_report"]

_INSTALL = 'install the plot extra: pip install "memory-kernel[plot]"'


class PlotUnavailableError(ConfigError):
    """``--plot`` was asked for but matplotlib is not installed."""


def check_plottable(suite: str, *, sweep: bool) -> None:
    """Raise before a long run if ``--plot`` cannot be honoured."""
    if not sweep and suite != "locomo":
        raise ConfigError(
            f"--plot draws recall vs token budget for locomo; {suite} has no curve "
            f"(for a threshold curve use: memory-kernel tune {suite} --plot PATH)"
        )
    _pyplot()


def _pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only: no display, safe on servers and in CI
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise PlotUnavailableError(f"--plot needs matplotlib: {_INSTALL}") from exc
    return plt


def plot_report(report: SuiteReport, path: Path) -> None:
    """Write the report's curve as a PNG at ``path``."""
    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(7, 4.5), dpi=110)
    try:
        if "sweep" in report.tables:
            _sweep(axes, report)
        elif report.suite == "locomo":
            _locomo(axes, report)
        else:
            raise ConfigError(f"no plot for a {report.suite} report")
        axes.grid(alpha=0.3)
        axes.legend(loc="best", fontsize=8)
        figure.tight_layout()
        path.parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(path, format="png")
    finally:
        plt.close(figure)


def _locomo(axes: Any, report: SuiteReport) -> None:
    m = report.metrics
    budgets = sorted(
        int(name[len("context") : -len("_recall")])
        for name in m
        if name.startswith("context") and name.endswith("_recall")
    )
    tokens = [float(m[f"context{b}_tokens"]) for b in budgets]
    recall = [float(m[f"context{b}_recall"]) for b in budgets]
    axes.plot(tokens, recall, marker="o", label="memory-kernel (budgeted context)")
    for b, x, y in zip(budgets, tokens, recall, strict=True):
        axes.annotate(f"{b}", (x, y), textcoords="offset points", xytext=(4, -10), fontsize=7)
    if "naive_context_tokens" in m:
        axes.scatter(
            [float(m["naive_context_tokens"])], [float(m["naive_context_recall"])],
            marker="x", s=70, color="tab:red", label="naive context (all, no budget)",
        )  # fmt: skip
    axes.set_xlabel("tokens used per question (mean)")
    axes.set_ylabel("evidence recall")
    axes.set_ylim(0, 1)
    axes.set_title(f"LoCoMo: recall vs token budget ({report.embedder})", fontsize=10)


def _sweep(axes: Any, report: SuiteReport) -> None:
    rows = report.tables["sweep"]
    x = [float(r["threshold"]) for r in rows]
    for column in ("precision", "recall", "f1"):
        # Precision is undefined where nothing is predicted positive: a gap, not a 0.
        y = [
            math.nan if column == "precision" and not r.get("pos", 1) else float(r[column])
            for r in rows
        ]
        axes.plot(x, y, marker=".", label=column)
    best = report.metrics.get("best_threshold")
    if best is not None:
        axes.axvline(float(best), color="tab:green", linestyle="--", label=f"best {best:g}")
    default = report.metrics.get("default_threshold")
    if default is not None:
        axes.axvline(float(default), color="grey", linestyle=":", label=f"default {default:g}")
    param = next((n.split(";")[0].removeprefix("parameter: ") for n in report.notes), "")
    axes.set_xlabel(param or "threshold")
    axes.set_ylim(0, 1.02)
    axes.set_title(f"{report.suite} ({report.embedder})", fontsize=10)
