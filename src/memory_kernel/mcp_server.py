"""An MCP server over one agent's memory (``memory-kernel mcp``; the ``mcp`` extra).

An MCP client (a desktop assistant, an IDE agent) gets the memory tools an agent built on
the hooks has: ``search_memory`` (facts, episodes, past turns, each line with its id),
``remember`` (a fact through admission, dedup and supersession; ``preference`` for what
the user wants), ``recall`` (the budgeted context the kernel would give a turn for a
message: relevance masks, read-time resolution, the profile) and, only when the host
allows it, ``forget_memory``. The host chooses the agent when it starts the server; the
model never does. A client sees no conversation through MCP, so nothing is recorded but
what ``remember`` stores.

A library error (bad input, an id of nothing) is the tool's error result, with the
message; the server goes on.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from memory_kernel.cli_common import kernel_opened
from memory_kernel.config import StorageConfig
from memory_kernel.context.nodes import format_hit
from memory_kernel.erasure.tool import FORGET_DESCRIPTION, FORGET_MEMORY
from memory_kernel.errors import MemoryKernelError
from memory_kernel.heart.facts.tool import remember_input
from memory_kernel.kernel import MemoryKernel
from memory_kernel.models.context import ContextRequest
from memory_kernel.validation import check_agent_id

__all__ = ["SOURCE", "memory_server", "serve_stdio"]

#: ``metadata.source`` of a fact remembered through MCP.
SOURCE = "mcp"
_INSTRUCTIONS = (
    "Long-term memory of this user. Search it before answering anything that may depend on "
    "what they said before; remember what they tell you about themselves, their work and "
    "what they want; a newer fact of the same subject replaces the older one."
)


async def _typed(call: Callable[[], Awaitable[Any]]) -> Any:
    """The call's result; a library error becomes the tool's error result."""
    try:
        return await call()
    except MemoryKernelError as exc:
        raise ToolError(f"{type(exc).__name__}: {exc}") from exc


def memory_server(kernel: MemoryKernel, agent_id: str, *, forget: bool = False) -> MCPServer:
    """The MCP server of ``agent_id``'s memory in ``kernel``; ``forget``: offer
    ``forget_memory`` too (erasure cannot be undone)."""
    server: MCPServer = MCPServer(name="memory-kernel", instructions=_INSTRUCTIONS)

    @server.tool(
        description=(
            "Search long-term memory; search_type: facts, episodes, both, turns (what was said "
            "in past conversations) or all. Each line: [id] [date] memory."
        )
    )
    async def search_memory(query: str, search_type: str = "both", limit: int = 5) -> str:
        hits = await _typed(
            lambda: kernel.search_memory(agent_id, query, search_type=search_type, limit=limit)
        )
        return "\n".join(f"- [{h.id}] {format_hit(h)}" for h in hits) or "(nothing found)"

    @server.tool(
        description=(
            "Remember one self-contained fact (e.g. 'The user's sister Noor lives in "
            "Manchester'). subject: what it is about, the same words each time (a newer fact "
            "of a subject replaces the older one). preference: true when it is what the user "
            "wants, likes or avoids, or how they want every answer."
        )
    )
    async def remember(
        content: str, subject: str | None = None, confidence: float | None = None,
        preference: bool = False,
    ) -> str:  # fmt: skip
        arguments = {
            "content": content, "subject": subject, "confidence": confidence,
            "preference": preference,
        }  # fmt: skip
        outcome = await _typed(
            lambda: kernel.heart.facts.learn(
                remember_input(arguments, agent_id=agent_id, metadata={"source": SOURCE})
            )
        )
        return f"{outcome.action.value} [{outcome.fact.id}]: {outcome.reason}"

    @server.tool(
        description=(
            "What memory holds for a message, as the agent's context would show it: facts, "
            "past episodes and turns about it, what the user wants, within a token budget."
        )
    )
    async def recall(message: str, token_budget: int = 1000) -> str:
        built = await _typed(
            lambda: kernel.context.build(
                ContextRequest(agent_id=agent_id, message=message, token_budget=token_budget)
            )
        )
        return built.text or "(nothing relevant in memory)"

    if forget:

        @server.tool(name=FORGET_MEMORY, description=FORGET_DESCRIPTION)
        async def forget_memory(memory_ids: list[str]) -> str:
            report = await _typed(lambda: kernel.forget(agent_id, memory_ids))
            return (
                f"erased {report.facts} fact(s), {report.episodes} episode(s), "
                f"{report.turns} turn(s), {report.decisions} decision(s); "
                f"the summaries of {report.remade} episode(s) made again without them"
            )

    return server


async def serve_stdio(
    *, agent_id: str, dsn: str | None, data_dir: Path | None, storage: StorageConfig,
    embedder: str, forget: bool,
) -> None:  # fmt: skip
    """Open the store and serve ``agent_id``'s memory over stdin/stdout until the client
    closes it (``memory-kernel mcp``)."""
    agent = check_agent_id(agent_id)
    async with kernel_opened(dsn, data_dir, storage, embedder, serving=True) as kernel:
        await memory_server(kernel, agent, forget=forget).run_stdio_async()
