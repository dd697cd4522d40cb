"""Extracted facts in the context built by ``pre_turn``, end to end on a real PostgreSQL
(``context.provenance``): a fact whose source turn is shown is not shown again, and what a
later extracted fact replaced stays findable, noted, never reading as current."""

from __future__ import annotations

from datetime import timedelta

from memory_kernel import MemoryKernel
from memory_kernel.models.turns import TurnInput, TurnOutcome
from memory_kernel.testing import FrozenClock

AGENT = "agent-x"
FIRST = "Catching up on admin today. My book club day is Tuesday, at the Kentish Town library."
LATER = "Bad news from the library: my book club day is Thursday now, they cut Tuesday hours."


async def _turn(kernel: MemoryKernel, message: str, session: str) -> None:
    ctx = await kernel.pre_turn(TurnInput(agent_id=AGENT, session_id=session, message=message))
    await kernel.post_turn(ctx.turn, TurnOutcome(response_text="Noted."))


async def _context(kernel: MemoryKernel, question: str) -> str:
    ctx = await kernel.pre_turn(
        TurnInput(
            agent_id=AGENT, session_id="ask", message=question, signals={"token_budget": 2000}
        )
    )
    return ctx.text


async def test_a_fact_is_not_shown_beside_its_source_turn(
    xkernel: MemoryKernel, clock: FrozenClock
) -> None:
    await _turn(xkernel, FIRST, "s1")
    clock.advance(timedelta(days=30))
    await _turn(xkernel, LATER, "s2")
    report = await xkernel.extract_pending(AGENT)
    assert report.facts == {"added": 1, "superseded": 1} and report.failed == 0
    clock.advance(timedelta(days=2))
    text = await _context(xkernel, "What day does my book club meet?")
    assert "they cut Tuesday hours" in text  # the turn the current value was said in
    # Its fact says nothing the turn does not: it is left out, not shown twice.
    fact = "The user's book club day is Thursday now."
    assert not [line for line in text.splitlines() if line.endswith(fact)], text
    # The older turn is marked as replaced by the current value, and keeps its date.
    (older,) = [line for line in text.splitlines() if "Catching up" in line]
    assert older.startswith("- [") and older.endswith(f"(later replaced: {fact})")
