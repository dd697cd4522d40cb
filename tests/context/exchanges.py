"""One exchange through the public hooks, for the context tests that replay a chat."""

from __future__ import annotations

from datetime import timedelta

from memory_kernel import MemoryKernel
from memory_kernel.models.turns import TurnInput, TurnOutcome
from memory_kernel.testing import FrozenClock


async def exchange(
    kernel: MemoryKernel, agent: str, said: str, reply: str, *, session: str = "s1",
    gap: timedelta = timedelta(seconds=30),
) -> None:  # fmt: skip
    """The user says ``said``, the agent answers ``reply``; the frozen clock moves ``gap``."""
    ctx = await kernel.pre_turn(TurnInput(agent_id=agent, session_id=session, message=said))
    await kernel.post_turn(ctx.turn, TurnOutcome(response_text=reply))
    clock = kernel.clock
    assert isinstance(clock, FrozenClock)
    clock.advance(gap)


async def ask_later(kernel: MemoryKernel, agent: str, message: str, *, after: timedelta) -> str:
    """End session ``s1``, let ``after`` pass and ask ``message`` in a new session (budget
    1,000 tokens): the context text it gets."""
    await kernel.end_session(agent, "s1")
    clock = kernel.clock
    assert isinstance(clock, FrozenClock)
    clock.advance(after)
    asked = await kernel.pre_turn(
        TurnInput(agent_id=agent, session_id="s2", message=message, signals={"token_budget": 1000})
    )
    return asked.text
