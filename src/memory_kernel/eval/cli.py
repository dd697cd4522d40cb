"""What ``memory-kernel eval`` and ``memory-kernel tune`` do, behind their typer wrappers."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from rich.console import Console

from memory_kernel.config import MemoryKernelConfig
from memory_kernel.errors import ConfigError
from memory_kernel.eval.embedders import close_embedder, embedder_from_name
from memory_kernel.eval.report import SuiteReport, print_report, write_json
from memory_kernel.eval.suites import JUDGED_CV, check_options, load_suite
from memory_kernel.protocols import Embedder

__all__ = ["run_eval", "run_tune"]


async def _timed(
    embedder_name: str, work: Callable[[Embedder], Awaitable[SuiteReport]]
) -> SuiteReport:
    embedder = embedder_from_name(embedder_name)
    start = time.perf_counter()
    try:
        report = await work(embedder)
    finally:
        await close_embedder(embedder)
    return report.model_copy(update={"elapsed_s": round(time.perf_counter() - start, 2)})


def _check_inputs(data: Path, plot: Path | None, suite: str, *, sweep: bool) -> None:
    if not data.is_file():
        raise ConfigError(f"no such data file: {data}")
    if plot is not None:
        from memory_kernel.eval.plot import check_plottable

        check_plottable(suite, sweep=sweep)


def _emit(console: Console, report: SuiteReport, json_path: Path | None, plot: Path | None) -> None:
    print_report(report, console)
    if json_path is not None:
        write_json(report, json_path)
        console.print(f"[dim]wrote {json_path}[/]")
    if plot is not None:
        from memory_kernel.eval.plot import plot_report

        plot_report(report, plot)
        console.print(f"[dim]wrote {plot}[/]")


def run_eval(
    console: Console, *, suite: str, data: Path, embedder: str, json_path: Path | None,
    plot: Path | None, options: dict[str, object] | None = None, folds: int | None = None,
    seed: int = 0,
) -> SuiteReport:  # fmt: skip
    """Run one suite, print its report and summary, write JSON / PNG if asked. ``options``:
    the suite's own options (``SUITE_OPTIONS``), ``None`` values left out; with ``folds``,
    also cross-validate it (``eval/cv.py``) and show both figures."""
    runner = load_suite(suite)
    given = {k: v for k, v in (options or {}).items() if v is not None}
    check_options(suite, given)
    if "config" in given:  # a file, read (and refused if broken) before anything runs
        given["config"] = MemoryKernelConfig.from_file(str(given["config"]))
    # A judge and a configuration go into each fold; anything else is what a fold refits.
    passed = {"config", "judge"} if suite in JUDGED_CV else {"config"}
    refit = {k: v for k, v in given.items() if k not in passed}
    if folds is not None and refit:
        flags = ", ".join(f"--{o}" for o in sorted(refit))
        raise ConfigError(f"{flags} and --folds do not go together: cross-validation refits")
    _check_inputs(data, plot, suite, sweep=False)
    shown = f" · {folds} folds, seed {seed}" if folds is not None else ""
    console.print(f"[dim]suite {suite} · embedder {embedder} · data {data}{shown}[/]")
    if folds is None:
        report = asyncio.run(_timed(embedder, lambda chosen: runner(data, chosen, **given)))
    else:
        from memory_kernel.eval.cv import run_cv

        judge, config = given.get("judge"), given.get("config")
        assert judge is None or isinstance(judge, str)
        assert config is None or isinstance(config, MemoryKernelConfig)
        report = asyncio.run(
            _timed(
                embedder,
                lambda chosen: run_cv(
                    suite, data, chosen, folds=folds, seed=seed, judge=judge, config=config
                ),
            )
        )
    _emit(console, report, json_path, plot)
    return report


def run_tune(
    console: Console, *, suite: str, data: Path, embedder: str, param: str | None,
    values: str | None, json_path: Path | None, plot: Path | None,
) -> SuiteReport:  # fmt: skip
    """Sweep one threshold of a suite; print the table and the best value."""
    from memory_kernel.eval.sweep import sweep

    _check_inputs(data, plot, suite, sweep=True)
    console.print(f"[dim]tune {suite} · embedder {embedder} · data {data}[/]")
    report = asyncio.run(
        _timed(embedder, lambda chosen: sweep(suite, data, chosen, param=param, values=values))
    )
    _emit(console, report, json_path, plot)
    return report
