"""Quick start: the whole tour in twenty-odd lines (the README embeds this file).

``python examples/quickstart.py`` starts an embedded PostgreSQL + pgvector in a temporary
directory (gone at the end). With ``MEMORY_KERNEL_DSN`` set it uses that server instead, in
the schema ``MEMORY_KERNEL_SCHEMA`` (default ``memory_kernel``).
"""

import asyncio
import os
import tempfile

from memory_kernel import FactInput, MemoryKernel, MemoryKernelConfig, TurnInput, TurnOutcome


async def main(data_dir: str) -> None:
    schema = os.environ.get("MEMORY_KERNEL_SCHEMA", "memory_kernel")
    config = MemoryKernelConfig.from_mapping({"storage": {"schema_name": schema}})
    async with MemoryKernel.open(data_dir=data_dir, config=config) as kernel:
        for content in ("Spec 006 is planned", "Spec 006 has shipped"):  # same subject: newest wins
            fact = FactInput(agent_id="a1", subject="006 status", content=content)
            learned = await kernel.heart.facts.learn(fact)
        print(f"learn: {learned.action} - {learned.reason}")  # the old fact is kept as history
        # Before the model call: the budgeted memory context for this turn's prompt.
        turn = TurnInput(agent_id="a1", session_id="s1", message="What's the status of 006?")
        ctx = await kernel.pre_turn(turn)
        print(f"pre_turn: {ctx.report.tokens_used} tokens of context\n{ctx.text}")
        # After the model call: the episode records the turn (and a decision, if one was made).
        done = await kernel.post_turn(ctx.turn, TurnOutcome(response_text="It has shipped."))
        print(f"post_turn: episode {done.episode_id}, decision: {done.decision or done.skipped}")
        for hit in await kernel.search_memory("a1", "006 status", search_type="facts"):
            print(f"search_memory: {hit.score:.2f} {hit.text}")  # the agent's recall tool


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="mk-quickstart-") as tmp:
        asyncio.run(main(os.path.join(tmp, "pg")))
