"""The SQL of export: every row of an agent, table by table, streamed from one snapshot."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from sqlalchemy import Table, select, text
from sqlalchemy.ext.asyncio import AsyncConnection

from memory_kernel.storage.tables import (
    decisions,
    episodes,
    extraction_queue,
    facts,
    memory_events,
    turns,
)

__all__ = ["TABLES", "rows", "snapshot"]

#: What an agent's export holds, in this order: its memories, the audit trail, and the
#: turns still waiting for fact extraction (ids and attempts, no text of their own).
TABLES: tuple[Table, ...] = (facts, episodes, decisions, turns, memory_events, extraction_queue)
# Derived from ``content``/``summary`` by the server: nothing of the agent's own.
_DERIVED = frozenset({"search_tsv"})
# Oldest first; a queued turn is keyed by its turn.
_ORDER = {"extraction_queue": ("enqueued_at", "turn_id")}
_SNAPSHOT = text("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")


async def snapshot(conn: AsyncConnection) -> None:
    """Make the connection's transaction one read-only snapshot: every table is read as
    of the same moment, whatever is written meanwhile (the first statement of it)."""
    await conn.execute(_SNAPSHOT)


async def rows(
    conn: AsyncConnection, table: Table, agent_id: str, *, vectors: bool
) -> AsyncIterator[dict[str, Any]]:
    """The agent's rows of ``table``, oldest first, through a server-side cursor."""
    columns = [c for c in table.c if c.name not in _DERIVED and (vectors or c.name != "embedding")]
    order = _ORDER.get(table.name, ("created_at", "id"))
    query = (
        select(*columns)
        .where(table.c.agent_id == agent_id)
        .order_by(*(table.c[name] for name in order))
        .execution_options(yield_per=500)
    )
    result = await conn.stream(query)
    async for row in result:
        yield dict(row._mapping)
