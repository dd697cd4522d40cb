"""A decision ``post_turn`` records on its own — no ``decision_confidence`` from the host —
comes back in later prompts: the user flow that used to drop it (the 0.5 placeholder is
below passive recall's > 0.5)."""

from __future__ import annotations

import pytest

from memory_kernel import MemoryKernel
from memory_kernel.brain.gate import confidence_from_quality, quality_score
from memory_kernel.models.turns import TurnContext, TurnInput, TurnOutcome, TurnResult
from memory_kernel.testing import FrozenClock

AGENT = "agent-1"
DECISION = (
    "Use PostgreSQL for the orders service, because the team already runs it in production "
    "and the orders need transactions."
)
TERSE = "Keep the orders service on PostgreSQL."


async def _turn(
    kernel: MemoryKernel, message: str, reply: str, *, session: str = "s1", frame: str = "decision"
) -> tuple[TurnContext, TurnResult]:
    ctx = await kernel.pre_turn(
        TurnInput(agent_id=AGENT, session_id=session, message=message, frame=frame)
    )
    return ctx, await kernel.post_turn(ctx.turn, TurnOutcome(response_text=reply))


def _decisions_section(ctx: TurnContext) -> str:
    assert "## Related decisions" in ctx.text, ctx.text
    return ctx.text.split("## Related decisions", 1)[1].split("\n## ", 1)[0]


async def test_an_auto_recorded_decision_is_in_the_next_turns_context(
    kernel: MemoryKernel, clock: FrozenClock
) -> None:
    _, result = await _turn(kernel, "Which database should the orders service use?", DECISION)
    decision = result.decision
    assert decision is not None and decision.description == DECISION
    assert decision.confidence > kernel.config.context.passive_min_confidence
    clock.advance(minutes=2)
    later, _ = await _turn(
        kernel, "Remind me, what database do the orders use?", "PostgreSQL.", frame="question"
    )
    assert later.report.context is not None
    assert "decisions" in later.report.context.fetched
    section = _decisions_section(later)
    assert "Use PostgreSQL for the orders service" in section
    assert f"(confidence: {decision.confidence:.2f})" in section


async def test_it_comes_back_in_another_session_days_later(
    kernel: MemoryKernel, clock: FrozenClock
) -> None:
    _, result = await _turn(kernel, "Which database should the orders service use?", DECISION)
    assert result.decision is not None
    clock.advance(days=3)
    later, _ = await _turn(
        kernel, "What database did we pick for the orders service?", "PostgreSQL.",
        session="s2", frame="question",
    )  # fmt: skip
    assert "Use PostgreSQL for the orders service" in _decisions_section(later)


async def test_confidence_follows_the_gates_quality(kernel: MemoryKernel) -> None:
    _, reasoned = await _turn(kernel, "Which database should the orders service use?", DECISION)
    _, terse = await _turn(
        kernel, "Should the orders service stay on Postgres?", TERSE, session="s2"
    )
    assert reasoned.decision is not None and terse.decision is not None
    min_chars = kernel.config.brain.min_description_chars
    for result, text in ((reasoned, DECISION), (terse, TERSE)):
        quality = quality_score(text, reasoning=None, min_chars=min_chars)
        assert result.decision is not None
        assert result.decision.confidence == pytest.approx(confidence_from_quality(quality))
    assert reasoned.decision.confidence > terse.decision.confidence > 0.5


async def test_the_hosts_confidence_wins(kernel: MemoryKernel, clock: FrozenClock) -> None:
    ctx = await kernel.pre_turn(
        TurnInput(agent_id=AGENT, session_id="s1", message="Which database?", frame="decision")
    )
    result = await kernel.post_turn(
        ctx.turn, TurnOutcome(response_text=DECISION, decision_confidence=0.45)
    )
    assert result.decision is not None and result.decision.confidence == 0.45
    clock.advance(minutes=2)
    later, _ = await _turn(
        kernel, "Remind me, what database do the orders use?", "PostgreSQL.", frame="question"
    )
    # The host said 0.45: below the passive floor, so it is not injected (the tool finds it);
    # the turn that said it is this session's own, in the host's window, not recalled.
    assert "Use PostgreSQL for the orders service" not in later.text
