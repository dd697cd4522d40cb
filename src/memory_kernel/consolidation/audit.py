"""Bulk audit events: one INSERT ... SELECT over a jsonb parameter per batch.

``storage.events.write_events`` binds 11 parameters per row through SQLAlchemy; a big
agent's run writes tens of thousands of events, and that per-row Python work was a large
part of the apply phase. The rows written are the same (``memory_events``, one per change,
in the caller's transaction).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import bindparam, text
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.ext.asyncio import AsyncConnection

from memory_kernel.storage.events import Event

__all__ = ["insert_events"]

_INSERT = text(
    "INSERT INTO memory_events (agent_id, id, memory_kind, memory_id, event, reason, score,"
    " decided_by, related_id, details, created_at)"
    " SELECT v.agent_id, gen_random_uuid(), v.memory_kind, v.memory_id, v.event, v.reason,"
    " v.score, v.decided_by, v.related_id, coalesce(v.details, '{}'::jsonb), v.created_at"
    " FROM jsonb_to_recordset(:rows) AS v(agent_id text, memory_kind text, memory_id uuid,"
    "  event text, reason text, score float8, decided_by text, related_id uuid,"
    "  details jsonb, created_at timestamptz)"
).bindparams(bindparam("rows", type_=JSONB))


def _row(e: Event) -> dict[str, Any]:
    return {
        "agent_id": e.agent_id,
        "memory_kind": e.kind.value,
        "memory_id": str(e.memory_id),
        "event": e.event.value,
        "reason": e.reason,
        "score": e.score,
        "decided_by": e.decided_by.value,
        "related_id": None if e.related_id is None else str(e.related_id),
        "details": dict(e.details),
        "created_at": e.at.isoformat(),
    }


async def insert_events(conn: AsyncConnection, events: Sequence[Event]) -> None:
    """Insert the events in the caller's transaction (one statement)."""
    if events:
        await conn.execute(_INSERT, {"rows": [_row(e) for e in events]})
