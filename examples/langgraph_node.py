"""memory-kernel's hooks as LangGraph nodes.

``pip install langgraph`` (or ``pip install 'memory-kernel[langgraph]'``), then
``python examples/langgraph_node.py``. Without LangGraph it says so and exits cleanly.

The graph, one run per user turn::

    START -> pre_turn -> model -> (tool call?) -> search_memory -> model ... -> post_turn -> END

- ``pre_turn``  puts the turn's memory context (``TurnContext``) into the graph state;
- ``model``     is a fake chat model (deterministic, no network) that reads that context and
  may ask for the ``search_memory`` tool;
- ``search_memory`` runs the tool for it (``kernel.search_memory``);
- ``post_turn`` hands the turn back to memory-kernel, which records the episode and — in a
  decision frame — a decision, if the gate lets it through.

The kernel is opened once per process and shared by the nodes (a closure here; a
``RunnableConfig`` or your app's container works as well). A checkpointer would need the
state to be serialisable: keep ``ctx.turn.model_dump(mode="json")`` there and rebuild it
with ``TurnHandle.model_validate`` in ``post_turn``.
"""

from __future__ import annotations

import asyncio
import importlib.util
from typing import Any, TypedDict

MISSING = (
    "langgraph is not installed: this example needs it "
    "(pip install langgraph, or pip install 'memory-kernel[langgraph]'). Nothing to do."
)


class TurnState(TypedDict, total=False):
    """The graph's state for one user turn."""

    message: str
    frame: str | None
    context: Any  # the TurnContext from pre_turn
    tool_calls: list[dict[str, Any]]
    tool_output: str
    answer: str
    result: Any  # the TurnResult from post_turn


#: The fake model's script: message -> (answer, what the answer cannot be given without).
SCRIPT = {
    "Which queue should the billing worker use?": (
        "Use the existing RabbitMQ cluster for the billing worker, because it already "
        "carries the invoice events and the team knows how to operate it.",
        "RabbitMQ",
    ),
    "What is the invoice retry limit?": (
        "Invoices are retried 5 times before paging someone.",
        "5 times",
    ),
}


async def run() -> None:
    from _store import open_store
    from langgraph.graph import END, START, StateGraph

    from memory_kernel import FactInput, TurnInput, TurnOutcome

    agent, session = "langgraph-agent", "thread-1"
    async with open_store() as kernel:
        for content, confidence in [
            ("The invoice events flow through the RabbitMQ cluster", 0.9),
            ("Invoices are retried 5 times before paging someone", 0.4),  # tool-only recall
        ]:
            await kernel.heart.facts.learn(
                FactInput(agent_id=agent, content=content, confidence=confidence)
            )

        async def pre_turn(state: TurnState) -> TurnState:
            turn = TurnInput(
                agent_id=agent, session_id=session, message=state["message"], frame=state["frame"]
            )
            return {"context": await kernel.pre_turn(turn)}

        async def model(state: TurnState) -> TurnState:
            """Fake model: asks memory when its prompt lacks the key fact, else answers."""
            answer, needs = SCRIPT[state["message"]]
            if needs not in state["context"].text and "tool_output" not in state:
                return {"tool_calls": [{"query": state["message"]}]}
            return {"answer": answer, "tool_calls": []}

        async def search_memory(state: TurnState) -> TurnState:
            hits = await kernel.search_memory(agent, state["tool_calls"][0]["query"])
            return {"tool_output": "\n".join(h.text for h in hits)}

        async def post_turn(state: TurnState) -> TurnState:
            outcome = TurnOutcome(response_text=state["answer"])
            return {"result": await kernel.post_turn(state["context"].turn, outcome)}

        graph = StateGraph(TurnState)
        graph.add_node("pre_turn", pre_turn)
        graph.add_node("model", model)
        graph.add_node("search_memory", search_memory)
        graph.add_node("post_turn", post_turn)
        graph.add_edge(START, "pre_turn")
        graph.add_edge("pre_turn", "model")
        graph.add_conditional_edges(
            "model", lambda s: "search_memory" if s.get("tool_calls") else "post_turn"
        )
        graph.add_edge("search_memory", "model")
        graph.add_edge("post_turn", END)
        app = graph.compile()

        for message, frame in [
            ("Which queue should the billing worker use?", "decision"),
            ("What is the invoice retry limit?", None),
        ]:
            state = await app.ainvoke({"message": message, "frame": frame})
            report(state)


def report(state: dict[str, Any]) -> None:
    ctx, result = state["context"], state["result"]
    print(f"\nuser: {state['message']}")
    print(f"  pre_turn  : frame {ctx.report.frame}, {ctx.report.tokens_used} tokens injected")
    for line in ctx.text.splitlines():
        print(f"              {line}")
    if "tool_output" in state:
        hits = state["tool_output"].splitlines()
        print(f"  tool      : search_memory found {len(hits)}: {' | '.join(hits)}")
    print(f"  model     : {state['answer']}")
    if result.decision is not None:
        print(f"  post_turn : decision recorded: {result.decision.description[:60]}...")
    else:
        print(f"  post_turn : no decision ({result.skipped}: {result.reason})")


def main() -> None:
    if importlib.util.find_spec("langgraph") is None:
        print(MISSING)
        return
    asyncio.run(run())


if __name__ == "__main__":
    main()
