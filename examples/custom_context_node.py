"""Your own context nodes beside memory-kernel's, gated by your own relevance masks.

``python examples/custom_context_node.py`` (embedded PostgreSQL in a temporary directory;
see ``_store.py`` for ``MEMORY_KERNEL_DSN``).

The host registers two nodes with the ContextEngine (``kernel.context.register``):

- ``identity_context`` — a ``FunctionNode`` over a plain function (no I/O);
- ``world_state``      — a class implementing ``ContextNodeProvider`` (``name`` + async
  ``fetch``), standing in for something expensive: a status API, a dashboard query.

A relevance configuration (the JSON format of ``default_relevance.json``, passed as
``ContextConfig.relevance_config``) says, per cognitive mode, which nodes a turn needs:
``PLAN`` turns need the world state, ``CHAT`` turns do not, and a greeting needs no facts.
An excluded node's provider is never called — that is where the I/O saving comes from.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path

from _store import open_store

from memory_kernel import (
    ContextItem,
    ContextRequest,
    FactInput,
    FunctionNode,
    MemoryKernel,
    NodeContent,
    Tier,
    TurnInput,
)

AGENT = "custom-nodes"

RELEVANCE = {
    "template_masks": {
        "PLAN": {
            "identity_context": True,
            "world_state": True,
            "working_memory": True,
            "facts": True,
            "decisions": True,
            "episodic_memory": False,
            "gists": False,
        },
        "CHAT": {
            "identity_context": True,
            "world_state": False,  # chatting does not need the live deployment state
            "working_memory": True,
            "facts": True,
            "decisions": False,
            "episodic_memory": False,
            "gists": False,
        },
    },
    # Signals come from the host (TurnInput.signals) or are derived by the engine, like
    # greeting_pattern and prompt_token_count: "Hey!" needs no facts in any mode.
    "signal_rules": {"facts": [{"when": {"greeting_pattern": True}, "strength": "hard"}]},
    "max_included_nodes": 8,
}


class WorldState:
    """A ``ContextNodeProvider``: ``name`` and ``async fetch(request) -> NodeContent``."""

    name = "world_state"

    def __init__(self) -> None:
        self.calls = 0

    async def fetch(self, request: ContextRequest) -> NodeContent:
        self.calls += 1  # in real life: an HTTP call or a query, paid only when included
        lines = ["deploy pipeline: green", "staging runs build 4127", "prod freeze ends Friday"]
        return NodeContent(
            node=self.name,
            title="World state",
            tier=Tier.SYSTEM,
            items=tuple(ContextItem(text=line) for line in lines),
        )


async def play(kernel: MemoryKernel, world: WorldState) -> None:
    await kernel.heart.facts.learn(
        FactInput(agent_id=AGENT, content="Releases go out through the blue-green pipeline")
    )
    for mode, message in [
        ("PLAN", "What should we deploy first this week?"),
        ("CHAT", "How does our release process work?"),
        ("CHAT", "Hey!"),
    ]:
        before = world.calls
        ctx = await kernel.pre_turn(
            TurnInput(agent_id=AGENT, session_id="s1", message=message, mode=mode)
        )
        report = ctx.report.context
        assert report is not None  # the kernel always has a context engine
        inclusion = report.inclusion
        print(f"\n[{mode}] {message}")
        print(f"  included : {', '.join(inclusion.included)}")
        print(f"  skipped  : {', '.join(inclusion.excluded_hard + inclusion.excluded_soft)}")
        fetched = "fetched" if world.calls > before else "never fetched"
        print(f"  world_state provider: {fetched} (calls so far: {world.calls})")
        print(
            f"  tokens   : {report.tokens_used}/{report.token_budget} {dict(report.tokens_by_node)}"
        )
        for line in ctx.text.splitlines():
            print(f"    | {line}")


async def main() -> None:
    with tempfile.TemporaryDirectory(prefix="mk-relevance-") as tmp:
        config_path = Path(tmp) / "relevance.json"
        config_path.write_text(json.dumps(RELEVANCE, indent=2), encoding="utf-8")
        sections = {"context": {"relevance_config": str(config_path)}}
        async with open_store(sections) as kernel:
            identity = FunctionNode(
                "identity_context",
                "Identity",
                lambda request: ["You are Ops, the release assistant of the payments team."],
            )
            world = WorldState()
            kernel.context.register(identity)
            kernel.context.register(world)
            print(f"nodes: {', '.join(kernel.context.nodes)}")
            await play(kernel, world)


if __name__ == "__main__":
    asyncio.run(main())
