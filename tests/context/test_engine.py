"""The context engine against real Postgres: lazy fetch (statement counting), recall
thresholds, hybrid recall, decision dedup, host nodes, budget and the active tool."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memory_kernel import MemoryKernel, ValidationError
from memory_kernel.context.engine import ContextEngine
from memory_kernel.context.nodes import FunctionNode
from memory_kernel.context.relevance import RelevancePipeline
from memory_kernel.models.context import ContextRequest, MemorySource, Tier
from memory_kernel.storage.tables import facts
from memory_kernel.testing import FakeEmbedder, FrozenClock

from .conftest import add_decision, add_episode, add_fact, count_statements, runtime_of

A = "agent-a"

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def request(message: str, **extra: Any) -> ContextRequest:
    return ContextRequest(agent_id=A, session_id="s1", message=message, **extra)


async def test_greeting_in_acknowledge_makes_no_database_round_trip(
    kernel: MemoryKernel, engine: ContextEngine, embedder: FakeEmbedder
) -> None:
    await add_fact(kernel, A, "The user says hey to everyone")
    calls_before = embedder.calls
    with count_statements(kernel) as statements:
        ctx = await engine.build(
            request("Hey!", mode="ACKNOWLEDGE", recent_messages=["user: hi there"])
        )
    assert statements == [], "no SQL statement at all"
    assert embedder.calls == calls_before, "no embedding either"
    assert not {"facts", "episodic_memory", "decisions"} & set(ctx.report.fetched)
    assert ctx.hits == ()


async def test_greeting_signals_are_derived_so_respond_mode_skips_recall_too(
    kernel: MemoryKernel, engine: ContextEngine
) -> None:
    await add_fact(kernel, A, "hello there is a fact")
    with count_statements(kernel) as statements:
        ctx = await engine.build(request("hello!"))
    assert statements == []
    assert "facts" in ctx.report.inclusion.excluded_hard


async def test_a_question_fetches_recall_nodes_concurrently(
    kernel: MemoryKernel, engine: ContextEngine
) -> None:
    await add_fact(kernel, A, "The deployment of project 006 is shipped")
    await add_episode(kernel, A, "We debugged the 006 deployment pipeline together")
    await add_decision(kernel, A, "Ship project 006 behind a feature flag")
    ctx = await engine.build(request("what is the status of the 006 deployment?"))
    assert {"facts", "episodic_memory", "decisions"} <= set(ctx.report.fetched)
    sources = {h.source for h in ctx.hits}
    assert sources == {MemorySource.FACT, MemorySource.EPISODE, MemorySource.DECISION}
    assert "## Known facts" in ctx.text and "006 is shipped" in ctx.text
    assert "[pending] Ship project 006" in ctx.text
    assert ctx.report.tokens_used <= ctx.report.token_budget


async def test_excluded_nodes_are_never_queried(kernel: MemoryKernel) -> None:
    # user_traits reads the facts table too (the user's preferences): excluded as well.
    mask = {"facts": False, "decisions": False, "user_traits": False}
    relevance = RelevancePipeline.load({"template_masks": {"RESPOND": mask}}, strict=True)
    engine = ContextEngine(runtime_of(kernel), relevance=relevance)
    await add_fact(kernel, A, "the cat is named Miso")
    await add_episode(kernel, A, "we talked about the cat Miso")
    with count_statements(kernel) as statements:
        ctx = await engine.build(request("what is the cat called?"))
    assert statements, "episodes were searched"
    assert not any("FROM facts" in s or "FROM decisions" in s for s in statements)
    assert any("FROM episodes" in s for s in statements)
    assert {h.source for h in ctx.hits} == {MemorySource.EPISODE}
    await engine.close()


async def test_five_near_identical_decisions_become_one_and_distinct_ones_stay(
    kernel: MemoryKernel, engine: ContextEngine, clock: FrozenClock
) -> None:
    start = clock.now()
    for i in range(5):
        await add_decision(
            kernel,
            A,
            f"Here is my full live status report of the deploy work, part {i}",
            when=start + timedelta(minutes=i),
        )
    newest = "Here is my full live status report of the deploy work, part 4"
    await add_decision(kernel, A, "Roll the deploy back if the error rate exceeds two percent")
    await add_decision(kernel, A, "Deploy on Tuesdays only, never before a holiday")
    ctx = await engine.build(request("what did we decide about the deploy status?"))
    decided = [h.text for h in ctx.hits if h.source is MemorySource.DECISION]
    assert sum("live status report" in d for d in decided) == 1
    assert newest in decided, "the most recent duplicate is the one kept"
    assert any("error rate" in d for d in decided) and any("Tuesdays" in d for d in decided)
    assert ctx.report.decisions_deduplicated == 4


async def test_passive_recall_needs_confidence_above_half_the_tool_above_0_3(
    kernel: MemoryKernel, engine: ContextEngine
) -> None:
    await add_fact(kernel, A, "The user's favourite colour is teal", confidence=0.9)
    await add_fact(kernel, A, "The user's favourite colour might be orange", confidence=0.4)
    await add_fact(kernel, A, "The user's favourite colour could be grey", confidence=0.2)
    ctx = await engine.build(request("what is the user's favourite colour?"))
    passive = " ".join(h.text for h in ctx.hits)
    assert "teal" in passive and "orange" not in passive and "grey" not in passive
    active = await engine.search_memory(A, "favourite colour", search_type="facts", limit=5)
    texts = " ".join(h.text for h in active)
    assert "teal" in texts and "orange" in texts and "grey" not in texts
    assert all(h.source is MemorySource.FACT for h in active)


async def test_hybrid_recall_finds_facts_without_a_vector_by_full_text(
    kernel: MemoryKernel, engine: ContextEngine
) -> None:
    pending = await add_fact(kernel, A, "Invoice ZX-4411 was paid in March", embed=False)
    await add_fact(kernel, A, "The weather in Lisbon is mild")
    hits = await engine.search_memory(A, "invoice ZX-4411", search_type="facts")
    assert hits[0].id == pending


async def test_embedder_failure_falls_back_to_full_text(
    kernel: MemoryKernel, engine: ContextEngine, embedder: FakeEmbedder
) -> None:
    await add_fact(kernel, A, "The garage door code is 7791")
    embedder.fail = RuntimeError("embedding service down")
    ctx = await engine.build(request("what is the garage door code?"))
    assert any("7791" in h.text for h in ctx.hits)


async def test_other_agents_memories_are_never_recalled(
    kernel: MemoryKernel, engine: ContextEngine
) -> None:
    await add_fact(kernel, "agent-b", "Agent B's secret project is Falcon")
    ctx = await engine.build(request("what is the secret project?"))
    assert "Falcon" not in ctx.text
    assert await engine.search_memory(A, "secret project Falcon") == []


async def test_host_nodes_are_awaited_only_when_included(
    kernel: MemoryKernel, engine: ContextEngine
) -> None:
    calls: list[str] = []

    async def identity(req: ContextRequest) -> list[str]:
        calls.append(req.mode)
        return ["You are Nous, a careful assistant."]

    engine.register(FunctionNode("identity_context", "Identity", identity))
    with pytest.raises(ValidationError):
        engine.register(FunctionNode("identity_context", "Identity", identity))
    ctx = await engine.build(request("tell me about the plan"))
    assert calls == ["RESPOND"]
    assert ctx.text.startswith("## Identity\n- You are Nous")
    await engine.build(request("run the deploy", mode="ACT"))
    assert calls == ["RESPOND"], "ACT masks identity_context: never fetched"


async def test_a_failing_host_node_is_reported_and_the_turn_goes_on(
    kernel: MemoryKernel, engine: ContextEngine
) -> None:
    def broken(_req: ContextRequest) -> list[str]:
        raise RuntimeError("world state service down")

    engine.register(FunctionNode("world_state", "World", broken))
    await add_fact(kernel, A, "The office opens at nine")
    ctx = await engine.build(request("when does the office open?"))
    assert ctx.report.failed == ("world_state",)
    assert any("nine" in h.text for h in ctx.hits)


async def test_budget_holds_and_tiers_are_reported(
    kernel: MemoryKernel, engine: ContextEngine
) -> None:
    for i in range(12):  # distinct facts (near-verbatim repeats would be left out as such)
        tags = " ".join(f"{w}{i}" for w in ("alpha", "bravo", "delta", "kilo", "lima"))
        await add_fact(kernel, A, f"Garden tomatoes need water, note {tags}")
    recent = [f"user: message {i} about the garden" for i in range(4)]
    ctx = await engine.build(
        request(
            "how often do tomatoes need water in the garden?",
            recent_messages=recent,
            tool_results=["search_memory: tomatoes like sun"],
            token_budget=80,
        )
    )
    assert ctx.report.tokens_used <= 80
    assert engine.counter.count(ctx.text) <= 80
    assert ctx.report.tokens_by_tier.get(Tier.RECENT.value, 0) > 0
    assert ctx.report.tokens_by_tier.get(Tier.TOOL.value, 0) > 0
    assert ctx.report.items_dropped > 0
    assert "user: message 3" in ctx.text, "the newest message is kept first"


async def test_measured_node_sizes_feed_the_relevance_estimates(
    kernel: MemoryKernel, engine: ContextEngine
) -> None:
    await add_fact(kernel, A, "A long fact about apples " * 10)
    await engine.build(request("tell me about apples"))
    measured = engine.relevance.estimates.snapshot()
    assert measured["facts"] > 50


async def test_search_memory_validates_and_searches_both(
    kernel: MemoryKernel, engine: ContextEngine
) -> None:
    await add_fact(kernel, A, "Maria moved to Porto in 2021")
    await add_episode(kernel, A, "Maria told us about her move to Porto")
    hits = await engine.search_memory(A, "Maria Porto move")
    assert {h.source for h in hits} == {MemorySource.FACT, MemorySource.EPISODE}
    assert hits == sorted(hits, key=lambda h: -h.score)
    for bad in ({"search_type": "everything"}, {"limit": 0}, {"limit": 51}):
        with pytest.raises(ValidationError):
            await engine.search_memory(A, "x", **bad)
    with pytest.raises(ValidationError):
        await engine.search_memory("bad agent", "x")
    with pytest.raises(ValidationError):
        await engine.search_memory(A, "   ")


def test_tool_schemas_have_the_common_function_shape() -> None:
    schema, decision, remember = ContextEngine.tool_schemas()
    assert remember["function"]["name"] == "remember"  # tests/cognitive check it
    assert decision["function"]["name"] == "record_decision"  # tests/cognitive check it
    assert schema["type"] == "function"
    function = schema["function"]
    assert function["name"] == "search_memory"
    params = function["parameters"]
    assert params["required"] == ["query"]
    assert params["properties"]["search_type"]["enum"] == [
        "facts", "episodes", "both", "turns", "all",
    ]  # fmt: skip
    assert "agent_id" not in params["properties"], "the host supplies the agent"


async def test_rare_query_words_outweigh_common_ones(
    kernel: MemoryKernel, engine: ContextEngine
) -> None:
    for i in range(12):
        await add_fact(kernel, A, f"Caroline mentioned topic number {i} during the chat")
    target = await add_fact(kernel, A, "She signed up for a pottery class on weekends")
    hits = await engine.search_memory(A, "Caroline pottery class", search_type="facts", limit=3)
    assert hits[0].id == target, "the one rare word beats the name every fact shares"


async def test_term_statistics_of_a_large_agent_are_cached_between_turns(
    kernel: MemoryKernel, engine: ContextEngine
) -> None:
    rows = [
        {
            "agent_id": A, "id": uuid.uuid4(), "content": f"Gutter {i} was cleaned",
            "confidence": 0.8, "status": "active", "embedding": None,
            "last_evidence_at": NOW, "valid_from": NOW, "created_at": NOW, "updated_at": NOW,
        }
        for i in range(1000)
    ]  # fmt: skip
    async with kernel.database.transaction() as conn:
        await conn.execute(facts.insert(), rows)
    await add_fact(kernel, A, "The roof was repaired in June")
    with count_statements(kernel) as first:
        await engine.search_memory(A, "roof repaired", search_type="facts")
    with count_statements(kernel) as second:
        await engine.search_memory(A, "roof repaired", search_type="facts")
    assert len(second) == len(first) - 1, "the document frequencies are not counted again"


async def test_term_statistics_of_a_small_agent_are_counted_every_time(
    kernel: MemoryKernel, engine: ContextEngine
) -> None:
    await add_fact(kernel, A, "The roof was repaired in June")
    with count_statements(kernel) as first:
        await engine.search_memory(A, "roof repaired", search_type="facts")
    with count_statements(kernel) as second:
        await engine.search_memory(A, "roof repaired", search_type="facts")
    assert len(second) == len(first), "cheap at this size, and always current"


def test_request_from_turn_maps_the_hook_input() -> None:
    from memory_kernel.context import request_from_turn
    from memory_kernel.models.turns import TurnInput

    turn = TurnInput(
        agent_id=A,
        session_id="s9",
        message="status?",
        mode="CLARIFY",
        signals={
            "context_warmth": 0.2,
            "classification": {"urgency": "high"},
            "returning_from_silence": True,
            "token_budget": 900,
        },
        recent_messages=["user: hi"],
    )
    req = request_from_turn(turn, gists=["a gist"])
    assert (req.agent_id, req.session_id, req.mode, req.message) == (A, "s9", "CLARIFY", "status?")
    assert req.signals == {"context_warmth": 0.2}
    assert req.classification == {"urgency": "high"}
    assert req.returning_from_silence and req.token_budget == 900
    assert req.recent_messages == ["user: hi"] and req.gists == ["a gist"]


async def test_near_verbatim_memories_are_assembled_once(
    kernel: MemoryKernel, engine: ContextEngine
) -> None:
    for i in range(6):
        await add_fact(kernel, A, f"Fact {i} about the garden: tomatoes need water {i} times")
    await add_fact(kernel, A, "The greenhouse roof leaks when it rains")
    ctx = await engine.build(request("how often do tomatoes need water in the garden?"))
    garden = [h for h in ctx.hits if "tomatoes" in h.text]
    assert len(garden) == 1, "six near-verbatim facts take the budget of one"
    assert ctx.text.count("tomatoes need water") == 1
