"""Extracted facts recalled by the context engine on a real PostgreSQL
(``context.provenance``): by default none is shown (the turn it came from says it); shown,
the facts node offers only its few best extracted facts, each
dated by when it was said; a host's facts fill as before."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from memory_kernel import MemoryKernel
from memory_kernel.context.engine import ContextEngine
from memory_kernel.models.context import ContextRequest, MemorySource

from .conftest import add_fact, runtime_of

A = "agent-a"
SAID = datetime(2025, 3, 9, 10, 0, tzinfo=UTC)


# Distinct words, so no two facts are near-duplicates of each other.
_WORDS = (
    "meets Thursday evenings upstairs",
    "costs ninety pounds monthly",
    "uses stoneware clay mostly",
    "runs six weekly sessions",
    "starts after work hours",
    "has twelve enrolled students",
    "fires glazes every fortnight",
    "needs aprons brought along",
    "ends with exhibition night",
    "studio sits in Tufnell Park",
    "studio opens kiln to members",
    "studio sells wheels secondhand",
    "studio hosts taster mornings",
    "studio closes during August",
    "studio lends tools freely",
    "studio shares parking nearby",
)


def _provenance() -> dict[str, Any]:
    return {"source": "extraction", "turn_id": str(uuid.uuid4()), "said_at": SAID.isoformat()}


async def _pottery(kernel: MemoryKernel, limit: int) -> ContextRequest:
    said = [f"The pottery class {w}" for w in _WORDS[: limit + 4]]
    for text in said:
        await add_fact(kernel, A, text, metadata=_provenance())
    for w in _WORDS[limit + 4 : 2 * limit + 6]:
        await add_fact(kernel, A, f"The pottery studio {w}")
    return ContextRequest(
        agent_id=A, session_id="s1", message="when is the pottery class?", token_budget=4000
    )


async def test_extracted_facts_are_left_to_the_turns_they_came_from(
    kernel: MemoryKernel, engine: Any
) -> None:
    """By default (``extracted_facts_shown`` off) no extracted fact is shown: the turn it
    came from says it; a host's facts fill as before."""
    limit = kernel.config.context.passive_limit
    ctx = await engine.build(await _pottery(kernel, limit))
    facts = [h for h in ctx.hits if h.source is MemorySource.FACT]
    assert facts and not [h for h in facts if "turn_id" in h.metadata]
    assert len(facts) == limit + 2
    assert "pottery class" not in ctx.text


async def test_the_facts_node_offers_only_a_few_extracted_facts(kernel: MemoryKernel) -> None:
    context = kernel.config.context.model_copy(update={"extracted_facts_shown": True})
    config = kernel.config.model_copy(update={"context": context})
    engine = ContextEngine(replace(runtime_of(kernel), config=config))
    limit = kernel.config.context.passive_limit
    request = await _pottery(kernel, limit)
    ctx = await engine.build(request)
    await engine.close()
    facts = [h for h in ctx.hits if h.source is MemorySource.FACT]
    extracted = [h for h in facts if "turn_id" in h.metadata]
    assert len(extracted) == limit  # not the limit + 4 that fit
    assert len(facts) - len(extracted) == limit + 2  # a host's facts fill as before
    lines = [line for line in ctx.text.splitlines() if "pottery class" in line]
    assert len(lines) == limit and all(line.startswith("- [9 March 2025] ") for line in lines)
