"""The MCP server over one agent's memory, driven by the official MCP client: in process,
and as ``memory-kernel mcp`` in a subprocess over stdio (nothing but the protocol on
standard output). Real PostgreSQL."""

from __future__ import annotations

import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import CallToolResult, TextContent

from memory_kernel import HashingEmbedder, MemoryKernel
from memory_kernel.mcp_server import memory_server
from memory_kernel.models.facts import PREFERENCE
from tests.conftest import schema_config

AGENT = "agent-mcp"
_ID = re.compile(r"\[([0-9a-f-]{36})\]")


def _text(result: CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, TextContent))


@asynccontextmanager
async def _client(kernel: MemoryKernel, *, forget: bool = False) -> AsyncIterator[Client]:
    async with Client(memory_server(kernel, AGENT, forget=forget)) as client:
        yield client


async def test_the_tools_remember_search_recall_and_supersede(kernel: MemoryKernel) -> None:
    async with _client(kernel) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert names == {"search_memory", "remember", "recall"}
        first = await client.call_tool(
            "remember", {"content": "Spec 006 is planned", "subject": "006 status"}
        )
        assert not first.is_error and _text(first).startswith("added [")
        second = await client.call_tool(
            "remember", {"content": "Spec 006 has shipped", "subject": "006 status"}
        )
        assert _text(second).startswith("superseded [")
        await client.call_tool(
            "remember",
            {"content": "The user wants code examples in TypeScript.", "preference": True},
        )
        found = _text(await client.call_tool("search_memory", {"query": "spec 006 status"}))
        assert "Spec 006 has shipped" in found and "planned" not in found
        assert _ID.search(found) is not None
        context = _text(
            await client.call_tool("recall", {"message": "How do I add retries to the worker?"})
        )
        assert "TypeScript" in context  # what the user wants, whatever the words
    facts = await kernel.heart.facts.search(AGENT, "TypeScript code examples")
    (typescript,) = [f.fact for f in facts if "TypeScript" in f.fact.content]
    assert typescript.category == PREFERENCE and typescript.metadata == {"source": "mcp"}


async def test_forget_is_offered_only_when_allowed(kernel: MemoryKernel) -> None:
    async with _client(kernel) as client:
        assert "forget_memory" not in {t.name for t in (await client.list_tools()).tools}
    async with _client(kernel, forget=True) as client:
        await client.call_tool("remember", {"content": "The user's old address is 12 Elm St."})
        found = _text(await client.call_tool("search_memory", {"query": "old address Elm"}))
        (memory_id,) = _ID.findall(found)
        done = await client.call_tool("forget_memory", {"memory_ids": [memory_id]})
        assert _text(done).startswith("erased 1 fact(s)")
        again = await client.call_tool("forget_memory", {"memory_ids": [memory_id]})
        assert again.is_error and "NotFoundError" in _text(again)
        assert _text(await client.call_tool("search_memory", {"query": "Elm"})) == (
            "(nothing found)"
        )


async def test_bad_input_is_an_error_result_and_the_server_goes_on(kernel: MemoryKernel) -> None:
    async with _client(kernel) as client:
        empty = await client.call_tool("remember", {"content": "  "})
        assert empty.is_error and "ValidationError" in _text(empty)
        kind = await client.call_tool("search_memory", {"query": "x", "search_type": "nope"})
        assert kind.is_error and "search_type" in _text(kind)
        fine = await client.call_tool("remember", {"content": "The user's dog is Rex."})
        assert not fine.is_error


async def test_memory_kernel_mcp_over_stdio(pg_dsn: str, drop_schema: str) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memory_kernel.cli", "mcp", "--agent", AGENT, "--dsn", pg_dsn,
              "--schema", drop_schema, "--embedder", "hashing"],
    )  # fmt: skip
    async with Client(params) as client:
        done = await client.call_tool("remember", {"content": "The user's dog is called Rex."})
        assert _text(done).startswith("added [")
        found = _text(await client.call_tool("search_memory", {"query": "dog Rex"}))
        assert "The user's dog is called Rex." in found
    # The subprocess wrote to the test's store: the same agent, seen from here.
    async with MemoryKernel.open(
        pg_dsn, config=schema_config(drop_schema), embedder=HashingEmbedder()
    ) as kernel:
        (hit,) = await kernel.heart.facts.search(AGENT, "dog called Rex")
    assert hit.fact.metadata == {"source": "mcp"}
