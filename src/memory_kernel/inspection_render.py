"""Terminal rendering of :class:`memory_kernel.inspection.AgentInspection` (rich tables)."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from memory_kernel.inspection import AgentInspection, ContextReportEntry
from memory_kernel.models.enums import MemoryKind
from memory_kernel.models.facts import Fact

__all__ = ["render_inspection"]

_TEXT_WIDTH = 70


def _short(text: str, width: int = _TEXT_WIDTH) -> str:
    flat = " ".join(text.split())
    return escape(flat if len(flat) <= width else flat[: width - 1] + "…")


def _when(fact: Fact) -> str:
    return fact.valid_from.strftime("%Y-%m-%d %H:%M")


def render_inspection(result: AgentInspection, console: Console) -> None:
    console.print(f"[bold]memory-kernel inspect[/] · agent [cyan]{escape(result.agent_id)}[/]")
    console.print(_counts_table(result))
    console.print(_facts_table(result))
    console.print(_rejected_table(result))
    console.print(_reports_table(result.context_reports))
    queue = result.extraction
    if queue.queued or queue.parked:
        console.print(
            f"fact extraction: {queue.queued} turn(s) queued ({queue.retrying} retrying), "
            f"{queue.parked} parked"
            + (f"; last error: {_short(queue.last_error)}" if queue.last_error else "")
        )
    if result.without_vector:
        left = ", ".join(f"{table} {n}" for table, n in result.without_vector.items())
        console.print(
            f"without a vector (an embedder outage; the next consolidate embeds them): {left}"
        )


def _counts_table(result: AgentInspection) -> Table:
    table = Table(title="memories by status")
    table.add_column("kind", style="bold")
    table.add_column("status")
    table.add_column("count", justify="right")
    for kind in MemoryKind:
        rows = [c for c in result.counts if c.kind is kind]
        if not rows:
            table.add_row(kind.value, "[dim]none[/]", "0")
        for c in rows:
            table.add_row(kind.value, c.status, str(c.count))
    return table


def _facts_table(result: AgentInspection) -> Table:
    table = Table(title="newest facts and what they superseded")
    # The id a caller passes to forget / `memory-kernel erase --memory` (the chain goes too).
    table.add_column("id", no_wrap=True, style="dim")
    table.add_column("fact (current)")
    table.add_column("status")
    table.add_column("since")
    table.add_column("supersession chain (newest first)")
    for chain in result.facts:
        history = " ← ".join(
            f"{_short(old.content, 40)} [dim]({old.status.value}, {_when(old)})[/]"
            for old in chain.previous
        )
        table.add_row(
            str(chain.fact.id),
            _short(chain.fact.content),
            chain.fact.status.value,
            _when(chain.fact),
            history or "[dim]—[/]",
        )
    if not result.facts:
        table.add_row("", "[dim]no facts[/]", "", "", "")
    return table


def _rejected_table(result: AgentInspection) -> Table:
    table = Table(title="rejected / soft-deleted decisions")
    table.add_column("when")
    table.add_column("session")
    table.add_column("description")
    table.add_column("reason", style="yellow")
    for d in result.rejected_decisions:
        table.add_row(
            d.updated_at.strftime("%Y-%m-%d %H:%M"),
            escape(d.session_id),
            _short(d.description, 50),
            escape(d.rejection_reason or "—"),
        )
    if not result.rejected_decisions:
        table.add_row("[dim]none[/]", "", "", "")
    return table


def _reports_table(entries: tuple[ContextReportEntry, ...]) -> Table:
    table = Table(title="last context reports (newest first)")
    table.add_column("when")
    table.add_column("mode")
    table.add_column("fetched")
    table.add_column("skipped")
    table.add_column("tokens", justify="right")
    table.add_column("dedup", justify="right")
    for entry in entries:
        report = entry.report
        inclusion = report.inclusion
        soft = [n for n in inclusion.excluded_soft if n not in inclusion.recovered_soft]
        skipped = (*inclusion.excluded_hard, *soft)
        table.add_row(
            entry.at.strftime("%Y-%m-%d %H:%M"),
            escape(inclusion.mode),
            escape(", ".join(report.fetched) or "—"),
            escape(", ".join(skipped) or "—"),
            f"{report.tokens_used}/{report.token_budget}",
            str(report.decisions_deduplicated),
        )
    if not entries:
        table.add_row("[dim]none yet[/]", "", "", "", "", "")
    return table
