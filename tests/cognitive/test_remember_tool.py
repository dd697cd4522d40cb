"""The ``remember`` tool: the model stores a fact on purpose; ``post_turn`` learns it in the
turn's unit of work (admission, dedup, supersession), with provenance. Real Postgres."""

from __future__ import annotations

from datetime import timedelta

import pytest

from memory_kernel import MemoryKernel, ValidationError
from memory_kernel.models.enums import FactStatus
from memory_kernel.models.facts import PREFERENCE, LearnAction
from memory_kernel.models.turns import (
    ToolResult,
    TurnContext,
    TurnInput,
    TurnOutcome,
    TurnResult,
)
from memory_kernel.testing import FrozenClock

AGENT = "agent-r"


def _remember(content: str, **args: object) -> ToolResult:
    return ToolResult(tool_name="remember", arguments={"content": content, **args}, output="ok")


async def _turn(
    kernel: MemoryKernel, message: str, *calls: ToolResult, session: str = "s1"
) -> tuple[TurnContext, TurnResult]:
    ctx = await kernel.pre_turn(TurnInput(agent_id=AGENT, session_id=session, message=message))
    return ctx, await kernel.post_turn(
        ctx.turn, TurnOutcome(response_text="Got it.", tool_results=list(calls))
    )


def test_the_tool_is_offered_with_its_schema(kernel: MemoryKernel) -> None:
    tools = {t["function"]["name"]: t["function"] for t in kernel.tool_schemas()}
    params = tools["remember"]["parameters"]
    assert params["required"] == ["content"]
    assert set(params["properties"]) == {"content", "subject", "confidence", "preference"}


async def test_a_remembered_fact_is_learned_with_its_provenance(
    kernel: MemoryKernel, clock: FrozenClock
) -> None:
    ctx, result = await _turn(
        kernel, "My sister Noor moved to Manchester.",
        _remember("The user's sister Noor lives in Manchester.", subject="sister Noor city",
                  confidence=0.9),
    )  # fmt: skip
    (learned,) = result.remembered
    assert learned.action is LearnAction.ADDED
    fact = learned.fact
    assert fact.subject == "sister Noor city" and fact.confidence == 0.9
    assert fact.derived_from == (ctx.turn.episode_id,)
    assert fact.metadata == {"source": "remember", "session_id": "s1"}
    clock.advance(timedelta(days=1))
    later = await kernel.pre_turn(
        TurnInput(agent_id=AGENT, session_id="s2", message="Where does Noor live?")
    )
    assert "- The user's sister Noor lives in Manchester." in later.text


async def test_a_newer_value_of_the_same_subject_supersedes(
    kernel: MemoryKernel, clock: FrozenClock
) -> None:
    _, first = await _turn(kernel, "Noor lives in Leeds.",
                           _remember("Noor lives in Leeds.", subject="Noor city"))  # fmt: skip
    clock.advance(timedelta(days=30))
    _, second = await _turn(
        kernel, "Noor moved to Manchester.",
        _remember("Noor lives in Manchester.", subject="Noor city"), session="s2",
    )  # fmt: skip
    old = await kernel.heart.facts.get(first.remembered[0].fact.id, agent_id=AGENT)
    assert old.status is FactStatus.SUPERSEDED
    assert old.superseded_by == second.remembered[0].fact.id


async def test_a_remembered_preference_is_shown_on_every_later_turn(
    kernel: MemoryKernel, clock: FrozenClock
) -> None:
    wants = "The user wants code examples in TypeScript."
    _, result = await _turn(
        kernel, "Code in TypeScript, please.", _remember(wants, preference=True)
    )
    assert result.remembered[0].fact.category == PREFERENCE
    clock.advance(timedelta(days=90))
    later = await kernel.pre_turn(
        TurnInput(agent_id=AGENT, session_id="s2", message="How do I add retries to the worker?")
    )
    assert f"## What the user wants\n- {wants}" in later.text
    ctx = await kernel.pre_turn(TurnInput(agent_id=AGENT, session_id="s3", message="Noted?"))
    odd = _remember("The user likes tea.", preference=1)
    with pytest.raises(ValidationError, match="preference"):
        await kernel.post_turn(ctx.turn, TurnOutcome(response_text="ok", tool_results=[odd]))
    assert not [f for f in await kernel.heart.facts.as_of(AGENT, clock.now())
                if f.content == "The user likes tea."]  # fmt: skip


async def test_failed_or_empty_calls(kernel: MemoryKernel) -> None:
    failed = ToolResult(tool_name="remember", arguments={"content": "x y z"}, is_error=True)
    _, result = await _turn(kernel, "Nothing to keep here.", failed)
    assert result.remembered == []
    ctx = await kernel.pre_turn(TurnInput(agent_id=AGENT, session_id="s9", message="Hello there"))
    empty = ToolResult(tool_name="remember", arguments={"content": "  "})
    with pytest.raises(ValidationError):
        await kernel.post_turn(ctx.turn, TurnOutcome(response_text="ok", tool_results=[empty]))
    hits = await kernel.search_memory(AGENT, "Hello there", search_type="turns")
    assert all(h.text != "Hello there" for h in hits)  # the failed post_turn wrote nothing


async def test_a_retried_post_turn_returns_what_was_remembered_once(
    kernel: MemoryKernel, clock: FrozenClock
) -> None:
    ctx = await kernel.pre_turn(TurnInput(agent_id=AGENT, session_id="s1", message="I'm Ana."))
    outcome = TurnOutcome(
        response_text="Nice to meet you.", tool_results=[_remember("The user's name is Ana.")]
    )
    first = await kernel.post_turn(ctx.turn, outcome)
    again = await kernel.post_turn(ctx.turn, outcome)
    assert [r.fact.id for r in again.remembered] == [r.fact.id for r in first.remembered]
    current = await kernel.heart.facts.as_of(AGENT, clock.now())
    assert [f.content for f in current] == ["The user's name is Ana."]
