"""Export: everything stored about an agent, as JSON-ready records (``kernel.export_agent``,
``memory-kernel export``) — the copy a user may ask for of what is remembered about them.

One read-only snapshot: facts (every version, superseded and merged ones included), episodes,
decisions (rejected ones with their reason), turns and the audit trail, each oldest first.
Records are ``{"table": name, "row": {column: value}}`` with ids and times as strings;
vectors only when asked for (they are the embedder's, not the user's, and large).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

from pydantic_core import to_jsonable_python

from memory_kernel.export import store
from memory_kernel.storage.database import Database
from memory_kernel.storage.vector import as_array
from memory_kernel.validation import check_agent_id

__all__ = ["export_agent"]


def export_agent(
    database: Database, agent_id: str, *, vectors: bool = False
) -> AsyncGenerator[dict[str, Any], None]:
    """Every stored row of the agent (module docstring); a bad ``agent_id`` is a
    ``ValidationError`` at once. The iterator holds a pooled connection while it runs:
    consume it to the end, or close it (``contextlib.aclosing``)."""
    return _records(database, check_agent_id(agent_id), vectors)


async def _records(
    database: Database, agent: str, vectors: bool
) -> AsyncGenerator[dict[str, Any], None]:
    async with database.connection() as conn:
        await store.snapshot(conn)
        for table in store.TABLES:
            async for row in store.rows(conn, table, agent, vectors=vectors):
                yield {"table": table.name, "row": to_jsonable_python(_plain(row))}


def _plain(row: dict[str, Any]) -> dict[str, Any]:
    vector = as_array(row.get("embedding"))
    if vector is not None:
        row["embedding"] = [float(x) for x in vector]
    return row
