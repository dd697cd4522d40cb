"""pre_turn / post_turn through the kernel with the context engine wired in."""

from __future__ import annotations

from memory_kernel import MemoryKernel
from memory_kernel.models.episodes import EpisodeInput
from memory_kernel.models.turns import TurnInput, TurnOutcome
from tests.statements import count_statements


async def test_greeting_fetches_no_memory_node(kernel: MemoryKernel) -> None:
    with count_statements(kernel) as statements:
        ctx = await kernel.pre_turn(
            TurnInput(agent_id="a1", session_id="s1", message="Hey!", mode="ACKNOWLEDGE")
        )
    assert ctx.report.context is not None
    assert ctx.report.context.fetched == ()
    # Only the turn's own episode bookkeeping touched the database, never a recall table.
    assert statements
    assert not any("FROM facts" in s or "FROM decisions" in s for s in statements)


async def test_respond_turn_recalls_an_admitted_episode_and_prefetches(
    kernel: MemoryKernel,
) -> None:
    started = await kernel.heart.episodes.start(
        EpisodeInput(agent_id="a1", session_id="old", summary="Migrated the billing service")
    )
    await kernel.heart.episodes.end(
        started.episode.id,
        agent_id="a1",
        outcome="success",
        summary="Migrated the billing service to Postgres 18 with zero downtime",
    )
    ctx = await kernel.pre_turn(
        TurnInput(
            agent_id="a1",
            session_id="s1",
            message="How did the billing service migration to Postgres go?",
            mode="RESPOND",
        )
    )
    assert ctx.report.context is not None
    assert "episodic_memory" in ctx.report.context.fetched
    assert "billing service" in ctx.text
    assert 0 < ctx.report.tokens_used <= ctx.report.context.token_budget
    assert ctx.turn.message.startswith("How did the billing")
    await kernel.post_turn(ctx.turn, TurnOutcome(response_text="It went well, no downtime."))
    hits = await kernel.search_memory("a1", "billing migration", search_type="episodes")
    assert hits and all("billing" in h.text.lower() for h in hits[:1])
    names = {s["function"]["name"] for s in kernel.tool_schemas()}
    assert "search_memory" in names


async def test_other_agents_memories_never_reach_the_context(kernel: MemoryKernel) -> None:
    started = await kernel.heart.episodes.start(
        EpisodeInput(agent_id="other", session_id="x", summary="Secret launch codes rotated")
    )
    await kernel.heart.episodes.end(
        started.episode.id, agent_id="other", outcome="success", summary="Secret codes rotated"
    )
    ctx = await kernel.pre_turn(
        TurnInput(agent_id="a1", session_id="s1", message="what about the secret codes?")
    )
    assert "Secret" not in ctx.text
