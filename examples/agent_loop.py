"""A minimal tool-calling agent loop around memory-kernel, with a fake model.

``python examples/agent_loop.py`` (embedded PostgreSQL in a temporary directory; see
``_store.py`` for ``MEMORY_KERNEL_DSN``). Each turn:

1. ``kernel.pre_turn``  -> the memory context that goes into the prompt;
2. the "model" answers — it may first call the ``search_memory`` tool that
   ``kernel.tool_schemas()`` describes, and the loop runs the tool for it;
3. ``kernel.post_turn`` -> the episode records the turn; in a decision frame, the gate
   decides whether the answer is a decision worth keeping.

The model is a deterministic stand-in (no network): it answers from its script, and calls
``search_memory`` when the context it was given lacks what the answer needs — exactly what a
real model is told to do by the tool's description. Swap ``FakeModel`` for your client.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

from _store import open_store

from memory_kernel import (
    FactInput,
    MemoryKernel,
    ToolResult,
    TurnContext,
    TurnInput,
    TurnOutcome,
    TurnResult,
)

AGENT, SESSION = "agent-loop", "session-1"


@dataclass(frozen=True)
class Step:
    """One scripted user turn, and what the fake model needs to answer it."""

    message: str
    answer: str
    frame: str | None = None  # the host's frame for the turn (None: memory-kernel picks one)
    needs: str | None = None  # text the answer depends on; searched for if not in the prompt


@dataclass
class Reply:
    text: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)


SCRIPT = [
    Step("Hey!", "Hi! What are we working on today?"),
    Step(
        "Which database should the orders service use?",
        "Use PostgreSQL for the orders service, because the team already runs it in "
        "production and the orders need transactions.",
        frame="decision",
        needs="PostgreSQL",
    ),
    Step(
        "When is the payments API deadline?",
        "The payments API deadline moved to March 14.",
        needs="March 14",
    ),
    Step("Great, ship the orders schema then.", "Done! ✅ Pushed to main.", frame="decision"),
]


class FakeModel:
    """A chat model stand-in with the usual shape: messages + tools in, text or tool calls
    out. It calls a tool at most once per turn, then answers."""

    def __init__(self, steps: list[Step]) -> None:
        self._steps = {s.message: s for s in steps}

    def complete(self, messages: list[dict[str, str]], tools: list[dict[str, Any]]) -> Reply:
        step = self._steps[next(m["content"] for m in reversed(messages) if m["role"] == "user")]
        prompt = "\n".join(m["content"] for m in messages)
        searched = any(m["role"] == "tool" for m in messages)
        offered = {t["function"]["name"] for t in tools}
        if step.needs and step.needs not in prompt and not searched and "search_memory" in offered:
            call = {"name": "search_memory", "arguments": {"query": step.message}}
            return Reply(tool_calls=[call])
        return Reply(text=step.answer)


async def seed(kernel: MemoryKernel) -> None:
    """What the host learned earlier (from documents, a profile, past conversations)."""
    for content, confidence in [
        ("The team runs PostgreSQL 16 as its production database", 0.9),
        ("The orders service needs transactional writes", 0.8),
        # Low confidence: passive recall (> 0.5) leaves it out of the prompt; the
        # search_memory tool (> 0.3) still finds it when the model asks.
        ("The payments API deadline moved to March 14", 0.4),
    ]:
        await kernel.heart.facts.learn(
            FactInput(agent_id=AGENT, content=content, confidence=confidence)
        )


async def run_tool(kernel: MemoryKernel, call: dict[str, Any]) -> ToolResult:
    """Execute the model's tool call (the host supplies ``agent_id``). ``record_decision``
    needs no work here: ``post_turn`` records the decision from the reported result."""
    if call["name"] == "record_decision":
        output = "recorded"
    else:
        hits = await kernel.search_memory(AGENT, **call["arguments"])
        output = "\n".join(f"- {h.text}" for h in hits)
    return ToolResult(tool_name=call["name"], arguments=call["arguments"], output=output)


async def turn(kernel: MemoryKernel, model: FakeModel, step: Step, history: list[str]) -> str:
    ctx: TurnContext = await kernel.pre_turn(
        TurnInput(
            agent_id=AGENT,
            session_id=SESSION,
            message=step.message,
            frame=step.frame,
            recent_messages=history[-4:],
        )
    )
    show_context(step, ctx)
    messages = [
        {"role": "system", "content": f"You are a helpful engineer.\n\n{ctx.text}"},
        {"role": "user", "content": step.message},
    ]
    tools, results = kernel.tool_schemas(), []
    reply = model.complete(messages, tools)
    while reply.tool_calls:  # the usual loop: run the tools, give the results back
        for call in reply.tool_calls:
            result = await run_tool(kernel, call)
            results.append(result)
            print(f"  tool call : {call['name']}({json.dumps(call['arguments'])})")
            print(f"  tool said : {result.output or '(nothing)'}")
            messages.append({"role": "tool", "content": result.output})
        reply = model.complete(messages, tools)
    print(f"  model     : {reply.text}")
    # No decision_confidence: a decision that passes the gate gets one from the gate's
    # quality score, high enough to come back in later prompts (the last turn shows it).
    outcome = TurnOutcome(response_text=reply.text, tool_results=results)
    show_result(await kernel.post_turn(ctx.turn, outcome))
    return reply.text


def show_context(step: Step, ctx: TurnContext) -> None:
    report = ctx.report
    inclusion = report.context.inclusion if report.context else None
    print(f"\nuser: {step.message}")
    print(f"  frame     : {report.frame} (deliberation started: {report.deliberation_started})")
    if inclusion is not None:
        skipped = inclusion.excluded_hard + inclusion.excluded_soft
        print(f"  nodes     : included {list(inclusion.included)}, skipped {list(skipped)}")
    injected = ctx.text.replace("\n", "\n              ") if ctx.text else "(nothing)"
    print(f"  injected  : {report.tokens_used} tokens: {injected}")


def show_result(result: TurnResult) -> None:
    if result.decision is not None:
        print(f"  recorded  : decision {result.decision.description!r}")
    else:
        print(
            f"  recorded  : no decision ({result.skipped}, layer {result.layer}: {result.reason})"
        )


async def main() -> None:
    async with open_store() as kernel:
        await seed(kernel)
        model, history = FakeModel(SCRIPT), list[str]()
        for step in SCRIPT:
            answer = await turn(kernel, model, step, history)
            history += [step.message, answer]
        gate = kernel.stats()
        print(f"\ngate: {gate.model_dump_json(exclude_defaults=True)}")


if __name__ == "__main__":
    asyncio.run(main())
