"""From the played run to the per-problem outcomes and the summary rows. Each number is read
from the run's traces or from the store — nothing here is a constant about the result."""

from __future__ import annotations

from memory_kernel.demo.models import (
    DuplicateDecisionsOutcome,
    EpisodeOutcome,
    GreetingOutcome,
    NoiseOutcome,
    Rejection,
    SeedProblem,
    SeedRow,
    StaleFactOutcome,
    Totals,
    TurnTrace,
    UpdateOutcome,
)
from memory_kernel.demo.script import NOISE_TURNS, SAME_DECISION_TURNS, SYNC_NEW, SYNC_OLD
from memory_kernel.demo.session import RECALL_NODES, Played
from memory_kernel.eval.answers import ContextText
from memory_kernel.inspection import DecisionState, inspect_agent
from memory_kernel.kernel import MemoryKernel
from memory_kernel.models.enums import FactStatus, MemoryKind
from memory_kernel.models.turns import SkipReason

__all__ = [
    "duplicate_decisions",
    "duplicate_episode",
    "greeting",
    "long_message_update",
    "noise",
    "seed_rows",
    "stale_fact",
    "totals",
]

# The stale value of spec 006: a prompt that contains it tells the model the spec is
# still planned (as a fact, or inside a stored status dump).
STALE_MARKER = "PLANNED"
# The context renders long decisions cut short: an injected line is recognised by its start.
_PREFIX = 60


def _rejection(trace: TurnTrace) -> Rejection:
    return Rejection(
        message=trace.message,
        reply=trace.reply,
        layer=trace.layer,
        skipped=trace.skipped,
        reason=trace.reason,
    )


async def stale_fact(kernel: MemoryKernel, played: Played, agent_id: str) -> StaleFactOutcome:
    old = played.learned["spec-planned"].fact
    new = played.learned["spec-shipped"].fact
    old_now = await kernel.heart.facts.get(old.id, agent_id=agent_id)
    new_now = await kernel.heart.facts.get(new.id, agent_id=agent_id)
    history = await kernel.heart.facts.history(new.id, agent_id=agent_id)
    probe = played.traces["ask-006"]
    return StaleFactOutcome(
        stale=old.content,
        current=new.content,
        stale_status=old_now.status,
        current_status=new_now.status,
        superseded_by_current=old_now.superseded_by == new.id,
        history=tuple(f.content for f in history),
        naive_active_versions=sum(
            t in (old.content, new.content) for t in played.naive.texts("fact")
        ),
        naive_injected_stale=any(STALE_MARKER in t for t in probe.naive_injected),
        kernel_injected_stale=any(STALE_MARKER in t for t in probe.kernel_injected),
        kernel_injected_current=any(new.content in t for t in probe.kernel_injected),
    )


def duplicate_episode(played: Played) -> EpisodeOutcome:
    first, second = played.traces["status-1"], played.traces["status-2"]
    return EpisodeOutcome(
        message=second.message,
        naive_episodes=sum("episode" in t.naive_stored for t in (first, second)),
        kernel_episodes=len({first.episode_id, second.episode_id}),
        reused=second.episode_reused,
    )


def noise(played: Played) -> NoiseOutcome:
    traces = [played.traces[k] for k in NOISE_TURNS]
    return NoiseOutcome(
        rejections=tuple(_rejection(t) for t in traces if t.decision is None),
        naive_noise_stored=sum("decision" in t.naive_stored for t in traces),
        kernel_noise_stored=sum(t.decision is not None for t in traces),
    )


def duplicate_decisions(played: Played) -> DuplicateDecisionsOutcome:
    traces = [played.traces[k] for k in SAME_DECISION_TURNS]
    replies = {t.reply for t in traces}
    recorded = [t.decision for t in traces if t.decision is not None]
    probe = played.traces["ask-db"]
    return DuplicateDecisionsOutcome(
        at_start=_rejection(played.traces["decide-again"]),
        naive_stored=sum("decision" in t.naive_stored for t in traces),
        kernel_stored=len(recorded),
        probe=probe.message,
        naive_injected=sum(item in replies for item in probe.naive_injected),
        kernel_injected=sum(
            any(d[:_PREFIX] in line for d in recorded) for line in probe.kernel_injected
        ),
        kernel_deduplicated=probe.decisions_deduplicated,
    )


def long_message_update(played: Played) -> UpdateOutcome:
    """The weekly sync moved (``script.SYNC_*``): what each memory put in front of the model
    for the question about it. Scored like the conversations suite: the new value present,
    and the old one never without the new one or without a date before it."""
    said = played.traces["sync-moved"].message
    probe = played.traces["ask-sync"]

    def seen(items: tuple[str, ...]) -> ContextText:
        return ContextText("\n".join(f"- {item}" for item in items))

    naive, kernel = seen(probe.naive_injected), seen(probe.kernel_injected)
    return UpdateOutcome(
        stale=SYNC_OLD,
        current=SYNC_NEW,
        message_chars=len(said),
        update_at=said.index(SYNC_NEW),
        probe=probe.message,
        naive_injected_current=naive.contains(SYNC_NEW),
        naive_stale_as_current=bool(naive.stale_as_current(SYNC_NEW, [SYNC_OLD])),
        kernel_injected_current=kernel.contains(SYNC_NEW),
        kernel_stale_as_current=bool(kernel.stale_as_current(SYNC_NEW, [SYNC_OLD])),
        kernel_lines=tuple(
            line for line in probe.kernel_injected if SYNC_OLD in line or SYNC_NEW in line
        ),
    )


def greeting(played: Played) -> GreetingOutcome:
    trace = played.traces["hey"]
    return GreetingOutcome(
        message=trace.message,
        nodes_skipped=tuple(n for n in trace.nodes_skipped if n in RECALL_NODES),
        kernel_memory_fetches=trace.memory_fetches,
        # The naive memory searches its list on every turn, a greeting included.
        naive_memory_fetches=1 if trace.naive_injected else 0,
        naive_tokens=trace.naive_tokens,
        kernel_tokens=trace.kernel_tokens,
    )


async def totals(kernel: MemoryKernel, played: Played, agent_id: str) -> Totals:
    seen = await inspect_agent(kernel.database, agent_id, limit=1)
    current_facts = seen.count(MemoryKind.FACT, FactStatus.ACTIVE) + seen.count(
        MemoryKind.FACT, FactStatus.PENDING_EMBED
    )
    episodes = sum(c.count for c in seen.counts if c.kind is MemoryKind.EPISODE)
    decisions = seen.count(MemoryKind.DECISION, DecisionState.FINALIZED) + seen.count(
        MemoryKind.DECISION, DecisionState.PENDING
    )
    traces = played.traces.values()
    return Totals(
        naive_stored=played.naive.count(),
        kernel_current=current_facts + episodes + decisions,
        naive_tokens=sum(t.naive_tokens for t in traces),
        kernel_tokens=sum(t.kernel_tokens for t in traces),
        turns=len(traces),
        naive_turns_with_memory_io=sum(bool(t.naive_injected) for t in traces),
        kernel_turns_with_memory_io=sum(t.memory_fetches > 0 for t in traces),
    )


def seed_rows(
    stale: StaleFactOutcome,
    episode: EpisodeOutcome,
    chatter: NoiseOutcome,
    same: DuplicateDecisionsOutcome,
    hey: GreetingOutcome,
    update: UpdateOutcome,
) -> tuple[SeedRow, ...]:
    """One side-by-side line per seed problem; ``handled`` is what the kernel must achieve."""
    return (
        _stale_row(stale),
        _episode_row(episode),
        _noise_row(chatter),
        _same_row(same),
        _greeting_row(hey),
        _update_row(update),
    )


def _stale_row(stale: StaleFactOutcome) -> SeedRow:
    return SeedRow(
        problem=SeedProblem.STALE_FACT,
        title="stale spec status",
        naive=f"{stale.naive_active_versions} versions active; stale one injected: "
        f"{_yes(stale.naive_injected_stale)}",
        kernel=f"old fact {stale.stale_status.value}, history of {len(stale.history)} kept; "
        f"stale one injected: {_yes(stale.kernel_injected_stale)}",
        handled=stale.stale_status is FactStatus.SUPERSEDED
        and stale.superseded_by_current
        and len(stale.history) >= 2
        and stale.kernel_injected_current
        and not stale.kernel_injected_stale,
    )


def _episode_row(episode: EpisodeOutcome) -> SeedRow:
    return SeedRow(
        problem=SeedProblem.DUPLICATE_EPISODE,
        title='"show me status" twice',
        naive=f"{episode.naive_episodes} episodes",
        kernel=f"{episode.kernel_episodes} episode (reused: {_yes(episode.reused)})",
        handled=episode.kernel_episodes == 1 and episode.reused,
    )


def _noise_row(chatter: NoiseOutcome) -> SeedRow:
    reasons = ", ".join(f"L{r.layer} {r.reason}" for r in chatter.rejections)
    return SeedRow(
        problem=SeedProblem.NOISE_DECISIONS,
        title='"Done! ✅" / status dumps',
        naive=f"{chatter.naive_noise_stored} recorded as decisions",
        kernel=f"{chatter.kernel_noise_stored} recorded; rejected: {reasons}",
        handled=chatter.kernel_noise_stored == 0 and bool(chatter.rejections),
    )


def _same_row(same: DuplicateDecisionsOutcome) -> SeedRow:
    return SeedRow(
        problem=SeedProblem.DUPLICATE_DECISIONS,
        title="near-duplicate decisions",
        naive=f"{same.naive_stored} stored, {same.naive_injected} injected",
        kernel=f"{same.kernel_stored} stored (L{same.at_start.layer} {same.at_start.reason}), "
        f"{same.kernel_injected} injected",
        handled=same.at_start.skipped is SkipReason.DUPLICATE and same.kernel_injected == 1,
    )


def _greeting_row(hey: GreetingOutcome) -> SeedRow:
    return SeedRow(
        problem=SeedProblem.GREETING,
        title='"Hey!"',
        naive=f"{hey.naive_memory_fetches} search, {hey.naive_tokens} tokens injected",
        kernel=f"{hey.kernel_memory_fetches} fetches, {hey.kernel_tokens} tokens; "
        f"skipped {', '.join(hey.nodes_skipped)}",
        handled=hey.kernel_memory_fetches == 0 and set(hey.nodes_skipped) == RECALL_NODES,
    )


def _update_row(update: UpdateOutcome) -> SeedRow:
    return SeedRow(
        problem=SeedProblem.LONG_MESSAGE_UPDATE,
        title="a value changed late in a long message",
        naive=f"new value injected: {_yes(update.naive_injected_current)}; old one reads as "
        f"current: {_yes(update.naive_stale_as_current)}",
        kernel=f"new value injected: {_yes(update.kernel_injected_current)}; old one reads "
        f"as current: {_yes(update.kernel_stale_as_current)}",
        handled=update.kernel_injected_current and not update.kernel_stale_as_current,
    )


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"
