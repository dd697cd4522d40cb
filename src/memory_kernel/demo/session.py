"""Plays the script against memory-kernel (public API only) and the naive baseline, side by
side in the same run, and traces what each did per turn."""

from __future__ import annotations

from dataclasses import dataclass, field

from memory_kernel.context.engine import PREFETCHED_NODES
from memory_kernel.demo.models import TurnTrace
from memory_kernel.demo.naive import NAIVE_DECISION_FRAMES, NaiveMemory
from memory_kernel.demo.script import SCRIPT, Learn, ScriptedLLM, Step, Turn
from memory_kernel.kernel import MemoryKernel
from memory_kernel.models.context import ContextReport
from memory_kernel.models.facts import FactInput, LearnOutcome
from memory_kernel.models.turns import TurnContext, TurnInput, TurnOutcome
from memory_kernel.testing import FrozenClock

__all__ = ["RECALL_NODES", "Played", "play"]

#: The context nodes that query the store (the others are built from the request).
RECALL_NODES = frozenset({"facts", "episodic_memory", "decisions"})


@dataclass
class Played:
    """Everything the run produced, for the outcome computations."""

    naive: NaiveMemory
    traces: dict[str, TurnTrace] = field(default_factory=dict)
    learned: dict[str, LearnOutcome] = field(default_factory=dict)
    llm: ScriptedLLM = field(default_factory=ScriptedLLM)


async def play(
    kernel: MemoryKernel,
    *,
    agent_id: str,
    clock: FrozenClock,
    script: tuple[Step, ...] = SCRIPT,
) -> Played:
    """Run every step: ``Wait`` moves the clock, ``Learn`` learns a fact in both memories,
    ``Turn`` goes through pre_turn → fake LLM → post_turn (and the naive equivalent)."""
    played = Played(naive=NaiveMemory(kernel.embedder, kernel.context.counter))
    for step in script:
        if isinstance(step, Turn):
            played.traces[step.key] = await _turn(kernel, played, agent_id, step)
        elif isinstance(step, Learn):
            played.learned[step.key] = await kernel.heart.facts.learn(
                FactInput(
                    agent_id=agent_id,
                    subject=step.subject,
                    content=step.content,
                    metadata={"source": step.source} if step.source else {},
                )
            )
            await played.naive.store("fact", step.content)
        else:
            clock.advance(step.delta)
    return played


async def _turn(kernel: MemoryKernel, played: Played, agent_id: str, step: Turn) -> TurnTrace:
    ctx = await kernel.pre_turn(
        TurnInput(
            agent_id=agent_id,
            session_id=step.session_id,
            message=step.message,
            frame=step.frame,
            mode=step.mode,
        )
    )
    injection = await played.naive.inject(step.message)
    reply = await played.llm.complete(system=ctx.text, message=step.message, turn=step)
    result = await kernel.post_turn(
        ctx.turn, TurnOutcome(response_text=reply, decision_confidence=step.confidence)
    )
    # The naive memory records after the turn, as the kernel does.
    stored = ["episode"]
    await played.naive.store("episode", step.message)
    if ctx.turn.frame in NAIVE_DECISION_FRAMES:
        stored.append("decision")
        await played.naive.store("decision", reply)
    report = ctx.report.context
    return TurnTrace(
        key=step.key,
        session_id=step.session_id,
        message=step.message,
        reply=reply,
        frame=ctx.turn.frame,
        mode=step.mode,
        naive_injected=injection.items,
        naive_tokens=injection.tokens,
        naive_stored=tuple(stored),
        kernel_injected=_memory_lines(ctx),
        kernel_tokens=ctx.report.tokens_used,
        nodes_fetched=() if report is None else report.fetched,
        nodes_skipped=_skipped(kernel, report),
        memory_fetches=_memory_fetches(report),
        decisions_deduplicated=0 if report is None else report.decisions_deduplicated,
        episode_id=ctx.turn.episode_id,
        episode_reused=ctx.report.episode_reused,
        decision=None if result.decision is None else result.decision.description,
        skipped=result.skipped,
        layer=result.layer,
        reason=result.reason,
    )


def _memory_lines(ctx: TurnContext) -> tuple[str, ...]:
    """The items of the turn's context text (each rendered as a ``- `` line)."""
    return tuple(line[2:] for line in ctx.text.splitlines() if line.startswith("- "))


def _skipped(kernel: MemoryKernel, report: ContextReport | None) -> tuple[str, ...]:
    """The engine's nodes the relevance rules left out of this turn."""
    if report is None:
        return ()
    inclusion = report.inclusion
    soft = [n for n in inclusion.excluded_soft if n not in inclusion.recovered_soft]
    return tuple(n for n in (*inclusion.excluded_hard, *soft) if n in kernel.context.nodes)


def _memory_fetches(report: ContextReport | None) -> int:
    """Recall nodes whose content came from the store for this turn: fetched now, or by the
    passive prefetch after the previous turn (that is I/O spent on this turn too)."""
    if report is None:
        return 0
    used = set(report.fetched)
    if report.prefetch_used:
        used |= {n for n in PREFETCHED_NODES if n in report.inclusion.included}
    return len(used & RECALL_NODES)
