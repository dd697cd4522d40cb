"""Terminal rendering of a :class:`DemoResult`: the session, one side-by-side table per seed
problem, a summary and the totals. Everything shown comes from the result."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.rule import Rule
from rich.table import Table

from memory_kernel.demo.models import DemoResult, TurnTrace
from memory_kernel.models.turns import SkipReason

__all__ = ["render_demo"]

_WIDTH = 60


def _short(text: str, width: int = _WIDTH) -> str:
    flat = " ".join(text.split())
    return escape(flat if len(flat) <= width else flat[: width - 1] + "…")


def _lines(items: tuple[str, ...], width: int = 48) -> str:
    return "\n".join(f"• {_short(i, width)}" for i in items) or "[dim](nothing)[/]"


def _side(title: str) -> Table:
    table = Table(title=f"[bold]{title}[/]", title_justify="left", show_lines=True, expand=True)
    table.add_column("", style="bold", ratio=1)
    table.add_column("naive memory", style="red", ratio=2)
    table.add_column("memory-kernel", style="green", ratio=2)
    return table


def render_demo(result: DemoResult, console: Console) -> None:
    console.print(Rule("[bold]memory-kernel demo[/]: a scripted agent session, two memories"))
    console.print(
        f"store: {escape(result.store)} · agent [cyan]{escape(result.agent_id)}[/] · "
        f"embedder {escape(result.embedder)} · fake LLM (no network) · simulated clock\n"
        f"naive memory = a plain list of everything + vector top-{result.naive_top_k} per "
        "turn, same embedder and token counter, same run; memory-kernel: a context budget "
        f"of {result.token_budget} tokens a turn"
    )
    console.print(_turns_table(result.turns))
    for table in (_stale(result), _episode(result), _noise(result), _same(result)):
        console.print(table)
    console.print(_greeting(result))
    console.print(_update(result))
    console.print(_summary(result))
    console.print(_totals(result))
    kept = "removed" if result.store_removed else "kept"
    console.print(
        f"[dim]store opened in {result.open_s:.1f} s (server start + migrations); demo "
        f"{result.duration_s:.1f} s in all; store {kept}[/]"
    )


def _turns_table(turns: tuple[TurnTrace, ...]) -> Table:
    table = Table(title="the session (pre_turn → fake LLM → post_turn)", expand=True)
    table.add_column("#", justify="right")
    table.add_column("user (frame)", ratio=3)
    table.add_column("fake LLM", ratio=3)
    table.add_column("naive tok", justify="right")
    table.add_column("kernel tok", justify="right")
    table.add_column("memory-kernel did", ratio=3)
    for n, t in enumerate(turns, 1):
        did = t.decision and "[green]decision recorded[/]"
        if t.decision is None and t.skipped not in (None, SkipReason.NOT_DELIBERATED):
            did = f"[yellow]rejected, layer {t.layer}: {escape(t.reason or '')}[/]"
        notes = [did or "[dim]no decision (frame)[/]"]
        if t.episode_reused:
            notes.append("episode reused")
        if t.memory_fetches == 0:
            notes.append("0 memory fetches")
        table.add_row(
            str(n),
            f"{_short(t.message, 40)} [dim]({t.frame}, {t.session_id})[/]",
            _short(t.reply, 40),
            str(t.naive_tokens),
            str(t.kernel_tokens),
            "; ".join(notes),
        )
    return table


def _stale(result: DemoResult) -> Table:
    s = result.stale_fact
    probe = next(t for t in result.turns if t.key == "ask-006")
    table = _side(f"1. stale fact: {s.stale!r} → {s.current!r}")
    table.add_row(
        "stored",
        f"{s.naive_active_versions} versions, both current",
        f"old one {s.stale_status.value} (history kept: {' → '.join(map(_short, s.history))})",
    )
    table.add_row(f"injected for {probe.message!r}", _lines(probe.naive_injected),
                  _lines(probe.kernel_injected))  # fmt: skip
    table.add_row("stale value in the prompt", _flag(s.naive_injected_stale),
                  _flag(s.kernel_injected_stale))  # fmt: skip
    return table


def _episode(result: DemoResult) -> Table:
    e = result.duplicate_episode
    table = _side(f"2. duplicate episode: {e.message!r} twice in two minutes")
    table.add_row("episodes", f"{e.naive_episodes} (a new one per turn)",
                  f"{e.kernel_episodes} ({'reused' if e.reused else 'not reused'})")  # fmt: skip
    return table


def _noise(result: DemoResult) -> Table:
    n = result.noise
    table = _side("3. chatter in a decision frame")
    for r in n.rejections:
        table.add_row(
            f"{_short(r.message, 30)} → {_short(r.reply, 30)}",
            "stored as a decision",
            f"rejected, layer {r.layer}: {escape(r.reason or '')}",
        )
    table.add_row("decisions stored", str(n.naive_noise_stored), str(n.kernel_noise_stored))
    return table


def _same(result: DemoResult) -> Table:
    d = result.duplicate_decisions
    table = _side("4. the same decision again and again")
    table.add_row("stored", str(d.naive_stored),
                  f"{d.kernel_stored} (the repeat in the session: layer {d.at_start.layer}, "
                  f"{escape(d.at_start.reason or '')}; other days are new sessions)")  # fmt: skip
    table.add_row(f"injected for {d.probe!r}", f"{d.naive_injected} copies",
                  f"{d.kernel_injected} ({d.kernel_deduplicated} near-duplicates dropped "
                  "by recall dedup)")  # fmt: skip
    return table


def _greeting(result: DemoResult) -> Table:
    g = result.greeting
    table = _side(f"5. greeting: {g.message!r}")
    table.add_row("memory fetches", str(g.naive_memory_fetches), str(g.kernel_memory_fetches))
    table.add_row("context nodes skipped", "none", escape(", ".join(g.nodes_skipped)))
    table.add_row("tokens injected", str(g.naive_tokens), str(g.kernel_tokens))
    return table


def _update(result: DemoResult) -> Table:
    u = result.long_message_update
    probe = next(t for t in result.turns if t.key == "ask-sync")
    table = _side(f"6. {u.stale!r} → {u.current!r}, said at character {u.update_at} of a "
                  f"{u.message_chars}-character message")  # fmt: skip
    table.add_row(f"injected for {u.probe!r}", _lines(probe.naive_injected),
                  _lines(probe.kernel_injected))  # fmt: skip
    table.add_row("new value in the prompt", _good(u.naive_injected_current),
                  _good(u.kernel_injected_current))  # fmt: skip
    table.add_row("old value reads as current", _flag(u.naive_stale_as_current),
                  _flag(u.kernel_stale_as_current))  # fmt: skip
    return table


def _summary(result: DemoResult) -> Table:
    table = Table(title="summary: every seed problem", expand=True, show_lines=True)
    table.add_column("problem", style="bold", ratio=2)
    table.add_column("naive memory", style="red", ratio=3)
    table.add_column("memory-kernel", style="green", ratio=4)
    table.add_column("handled", justify="center")
    for row in result.seeds:
        table.add_row(escape(row.title), escape(row.naive), escape(row.kernel),
                      "[green]✓[/]" if row.handled else "[red]✗[/]")  # fmt: skip
    return table


def _totals(result: DemoResult) -> Table:
    t = result.totals
    table = Table(title="totals over the session")
    table.add_column("", style="bold")
    table.add_column("naive memory", justify="right", style="red")
    table.add_column("memory-kernel", justify="right", style="green")
    table.add_row("memories stored (current)", str(t.naive_stored), str(t.kernel_current))
    table.add_row("tokens injected", str(t.naive_tokens), str(t.kernel_tokens))
    table.add_row("tokens saved", "", f"{t.tokens_saved} ({t.tokens_saved_pct:.0f}%)")
    table.add_row(
        "turns that queried the store",
        f"{t.naive_turns_with_memory_io}/{t.turns}",
        f"{t.kernel_turns_with_memory_io}/{t.turns}",
    )
    done = ", ".join(f"{k}: {v}" for k, v in result.consolidation.items()) or "nothing to do"
    table.add_row("nightly consolidate()", "", escape(done))
    return table


def _flag(value: bool) -> str:
    return "[bold red]yes[/]" if value else "[bold green]no[/]"


def _good(value: bool) -> str:
    """A yes that is the right answer (green), a no that is not (red)."""
    return "[bold green]yes[/]" if value else "[bold red]no[/]"
