"""``memory-kernel consolidate``: a progress bar while it runs, a summary table after."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from memory_kernel.cli_common import kernel_opened
from memory_kernel.config import StorageConfig
from memory_kernel.models.consolidation import (
    AgentRunStatus,
    ConsolidationAction,
    ConsolidationProgress,
    ConsolidationReport,
)

__all__ = ["render_report", "run_consolidate"]

_STATUS_STYLE = {
    AgentRunStatus.DONE: "green",
    AgentRunStatus.SKIPPED: "yellow",
    AgentRunStatus.FAILED: "red",
}


async def run_consolidate(
    console: Console,
    *,
    dsn: str | None,
    data_dir: Path | None,
    storage: StorageConfig,
    agent: str | None,
    dry_run: bool,
    concurrency: int,
    embedder: str,
    judge: str | None = None,
) -> ConsolidationReport:
    columns = (
        SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
        TextColumn("{task.completed}/{task.total} agents"), TimeElapsedColumn(),
    )  # fmt: skip
    # A one-off process: consolidation drains the embedding queue itself.
    async with kernel_opened(dsn, data_dir, storage, embedder, judge=judge) as kernel:
        with Progress(*columns, console=console, transient=True) as bar:
            task = bar.add_task("consolidating", total=None)
            finished: set[str] = set()

            def progress(event: ConsolidationProgress) -> None:
                detail = f" {event.done}" if event.done else ""
                bar.update(task, description=f"{event.agent_id}: {event.phase.value}{detail}")
                if event.phase.value == "done":
                    finished.add(event.agent_id)
                    bar.update(task, completed=len(finished))

            if agent is not None:
                bar.update(task, total=1)
                report = await kernel.consolidate(agent, dry_run=dry_run, progress=progress)
            else:
                report = await kernel.consolidate_all(
                    concurrency=concurrency, dry_run=dry_run, progress=progress
                )
    render_report(console, report)
    return report


def render_report(console: Console, report: ConsolidationReport) -> None:
    """The summary: one row per agent, a column per action that happened, then totals."""
    actions = [a for a in ConsolidationAction if report.count(a)]
    title = "consolidation (dry run: nothing written)" if report.dry_run else "consolidation"
    table = Table(title=title)
    table.add_column("agent", style="bold")
    table.add_column("status")
    for action in actions:
        table.add_column(action.value.replace("_", " "), justify="right")
    table.add_column("judge calls", justify="right")
    table.add_column("time (s)", justify="right")
    for agent in report.agents:
        style = _STATUS_STYLE[agent.status]
        table.add_row(
            agent.agent_id,
            f"[{style}]{agent.status.value}[/]",
            *(str(agent.counts.get(a, 0)) for a in actions),
            str(agent.judge_calls),
            f"{agent.duration_s:.2f}",
        )
    console.print(table)
    skipped = ", ".join(report.skipped_agents) or "none"
    console.print(
        f"{len(report.agents)} agent(s) in {report.duration_s:.2f}s; "
        f"judge calls {report.judge_calls}; skipped (busy): {skipped}"
    )
    for agent in report.agents:
        if agent.error:
            console.print(f"[yellow]{agent.agent_id}[/]: {agent.error}")
