"""A recalled turn that asks is shown with the turn that answered it (``context.replies``):
the pure rule first, then through the hooks on real Postgres."""

from __future__ import annotations

from datetime import timedelta

from memory_kernel import MemoryKernel
from memory_kernel.context.replies import asks
from memory_kernel.models.turns import TurnInput, TurnOutcome
from memory_kernel.testing import FrozenClock


def test_a_shown_part_asks_when_a_sentence_ends_with_a_question_mark() -> None:
    assert asks("Wow, sounds wonderful! What concert was it?")
    assert asks('Did you read "Dune?" I loved it.')
    assert asks("Which one (the blue?) Tell me.")
    assert not asks("It was Matt Patterson, he is so talented!")
    assert not asks("The query param ?id=3 was missing.")


async def _exchange(kernel: MemoryKernel, agent: str, session: str, said: str, reply: str) -> None:
    ctx = await kernel.pre_turn(TurnInput(agent_id=agent, session_id=session, message=said))
    await kernel.post_turn(ctx.turn, TurnOutcome(response_text=reply))
    clock = kernel.clock
    assert isinstance(clock, FrozenClock)
    clock.advance(timedelta(seconds=30))


async def test_a_recalled_question_is_shown_with_its_short_answer(
    kernel: MemoryKernel, clock: FrozenClock
) -> None:
    agent = "replies-agent"
    await _exchange(
        kernel, agent, "s1",
        "We celebrated my daughter's birthday with a concert last night.",
        "Wow, sounds wonderful! Which singer performed at the birthday concert?",
    )  # fmt: skip
    # The answer is the next exchange's message: it shares no word with the question below.
    await _exchange(kernel, agent, "s1", "It was Matt Patterson, so talented!", "Lovely.")
    await _exchange(
        kernel, agent, "s1",
        "Tell me about your garden instead, what grows there?",
        "Tomatoes mostly. " + "The soil is clay and it holds water for weeks. " * 12,
    )  # fmt: skip
    await kernel.end_session(agent, "s1")
    clock.advance(timedelta(days=1))
    asked = await kernel.pre_turn(
        TurnInput(
            agent_id=agent,
            session_id="s2",
            message="Which singer performed at the birthday concert?",
            signals={"token_budget": 1000},
        )
    )
    turns = [line for line in asked.text.splitlines() if "] assistant: " in line]
    lines = [line for line in turns if "Which singer performed" in line]
    assert lines, asked.text
    assert "→ user: It was Matt Patterson, so talented!" in lines[0]
    # Told once among the turns: the answer's own line (if recalled) repeats the pair.
    assert sum("Matt Patterson" in line for line in asked.text.splitlines()[1:]) <= 2
    assert not any("] user: It was Matt Patterson" in line for line in asked.text.splitlines())


async def test_a_long_answer_is_not_attached(kernel: MemoryKernel, clock: FrozenClock) -> None:
    agent = "replies-long"
    advice = "Tomatoes mostly. " + "The soil is clay and it holds water for weeks. " * 12
    await _exchange(kernel, agent, "s1", "What should I grow in my garden this year?", advice)
    await kernel.end_session(agent, "s1")
    clock.advance(timedelta(days=1))
    asked = await kernel.pre_turn(
        TurnInput(agent_id=agent, session_id="s2", message="What grows in my garden?")
    )
    question = [line for line in asked.text.splitlines() if "What should I grow" in line]
    assert question and "→" not in question[0]
