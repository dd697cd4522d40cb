"""``user_traits`` against real Postgres: the user's preferences are shown by kind, whatever
the query's words, before any recalled memory; a newer one of a slot wins; greetings and
excluded nodes cost nothing."""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any

from memory_kernel import MemoryKernel
from memory_kernel.context.engine import ContextEngine
from memory_kernel.context.relevance import RelevancePipeline
from memory_kernel.models.context import ContextRequest, Tier
from memory_kernel.models.facts import PREFERENCE, FactInput
from memory_kernel.testing import FrozenClock

from .conftest import add_fact, count_statements, runtime_of

A = "agent-traits"


def request(message: str, **extra: Any) -> ContextRequest:
    return ContextRequest(agent_id=A, session_id="s1", message=message, **extra)


async def prefer(
    kernel: MemoryKernel,
    content: str,
    agent: str = A,
    subject: str | None = None,
    metadata: dict[str, Any] | None = None,
) -> None:
    if metadata is not None:  # an extracted fact: said on the clock's day
        metadata = {**metadata, "said_at": kernel.clock.now().isoformat()}
    outcome = await kernel.heart.facts.learn(
        FactInput(
            agent_id=agent,
            content=content,
            category=PREFERENCE,
            subject=subject,
            metadata=metadata or {},
        )
    )
    assert outcome.fact.category == PREFERENCE


def lines(ctx: Any, node: str) -> list[str]:
    return [i.text for s in ctx.sections if s.node == node for i in s.items]


async def test_a_preference_is_shown_for_a_query_that_shares_none_of_its_words(
    kernel: MemoryKernel, engine: ContextEngine
) -> None:
    await prefer(kernel, "The user likes evidence-based information, not blogs.")
    await add_fact(kernel, A, "The user's due date is August 14.")
    ctx = await engine.build(request("What should I read to prepare for labour?"))
    assert lines(ctx, "user_traits") == ["The user likes evidence-based information, not blogs."]
    (section,) = [s for s in ctx.sections if s.node == "user_traits"]
    assert section.title == "What the user wants" and section.tier is Tier.PROFILE
    assert ctx.text.index("What the user wants") < ctx.text.index("Known facts")
    assert any(h.text.startswith("The user likes evidence-based") for h in ctx.hits)


async def test_only_the_agents_current_preferences_are_shown(
    kernel: MemoryKernel, engine: ContextEngine
) -> None:
    await prefer(kernel, "The user prefers aisle seats on long flights.")
    await prefer(kernel, "The other user prefers window seats on flights.", agent="someone-else")
    await add_fact(kernel, A, "The user flies to Lisbon in May.")  # no category: not a trait
    ctx = await engine.build(request("Book me something for Lisbon"))
    assert lines(ctx, "user_traits") == ["The user prefers aisle seats on long flights."]


async def test_the_preferences_claim_the_budget_before_recalled_memories(
    kernel: MemoryKernel, engine: ContextEngine
) -> None:
    await prefer(kernel, "The user always wants answers in metric units.")
    for n in range(8):
        await add_fact(kernel, A, f"The user's bike number {n} weighs {n + 7} kilograms.")
    ctx = await engine.build(request("How heavy are my bikes?", token_budget=40))
    assert lines(ctx, "user_traits") == ["The user always wants answers in metric units."]
    assert ctx.report.tokens_used <= 40


async def test_at_most_traits_limit_are_shown_the_best_for_the_query(
    kernel: MemoryKernel,
) -> None:
    config = kernel.config.model_copy(
        update={"context": kernel.config.context.model_copy(update={"traits_limit": 1})}
    )
    engine = ContextEngine(replace(runtime_of(kernel), config=config))
    await prefer(kernel, "The user only wants vegetarian restaurants.")
    await prefer(kernel, "The user hates early morning flights.")
    ctx = await engine.build(request("Which restaurants near the hotel?"))
    assert lines(ctx, "user_traits") == ["The user only wants vegetarian restaurants."]
    await engine.close()


async def test_a_preference_the_user_changed_is_shown_as_the_new_one_only(
    kernel: MemoryKernel, engine: ContextEngine, clock: FrozenClock
) -> None:
    await prefer(kernel, "The user prefers tea in the morning.", subject="user morning drink")
    clock.advance(days=30)
    await prefer(kernel, "The user prefers coffee in the morning.", subject="user morning drink")
    ctx = await engine.build(request("What should I drink in the morning?"))
    assert lines(ctx, "user_traits") == ["The user prefers coffee in the morning."]


async def test_a_greeting_or_an_excluded_node_reads_no_preference(
    kernel: MemoryKernel, engine: ContextEngine
) -> None:
    await prefer(kernel, "The user prefers short answers.")
    with count_statements(kernel) as statements:
        hello = await engine.build(request("Hey!"))
        thanks = await engine.build(request("Thanks, that helps", mode="ACKNOWLEDGE"))
    assert statements == []
    assert lines(hello, "user_traits") == lines(thanks, "user_traits") == []
    mask = {"RESPOND": {"user_traits": False}}
    relevance = RelevancePipeline.load({"template_masks": mask}, strict=True)
    off = ContextEngine(runtime_of(kernel), relevance=relevance)
    with count_statements(kernel) as statements:
        ctx = await off.build(request("What answers do I like?"))
    assert not any("category" in s for s in statements)
    assert "user_traits" not in ctx.report.fetched
    await off.close()


async def test_the_preferences_take_at_most_their_share_of_the_budget(
    kernel: MemoryKernel, engine: ContextEngine
) -> None:
    await prefer(kernel, "The user only wants vegetarian restaurants near the hotel.")
    await prefer(kernel, "The user hates early morning flights to anywhere at all.")
    await prefer(kernel, "The user prefers trains over buses for short trips abroad.")
    small = await engine.build(request("Plan our Osaka day trip", token_budget=300))
    assert len(lines(small, "user_traits")) == 1  # a tenth of 300 tokens holds one line
    large = await engine.build(request("Plan our Osaka day trip", token_budget=2000))
    assert len(lines(large, "user_traits")) == 3  # traits_limit


async def test_a_preference_a_newer_fact_replaced_is_not_what_the_user_wants(
    kernel: MemoryKernel, clock: FrozenClock
) -> None:
    """The newer value is phrased without a verb of wanting, so it is no preference itself;
    the facts node's recall judges the pair, and the profile leaves the older one out."""
    said = {"source": "extraction", "turn_id": str(uuid.uuid4())}
    await prefer(kernel, "The user likes their coffee with oat milk.", metadata=said)
    await prefer(kernel, "The user prefers aisle seats on flights.")
    clock.advance(days=20)
    # Learned by the host: the facts node shows it (an extracted one is said by its turn).
    await kernel.heart.facts.learn(
        FactInput(
            agent_id=A,
            content="The user has switched to drinking their coffee black, no milk anymore.",
        )
    )
    ctx = await kernel.context.build(request("How do I take my coffee?"))
    assert not any("oat milk" in line for line in lines(ctx, "user_traits"))
    assert "coffee black" in ctx.text  # the newer value, from the facts node
