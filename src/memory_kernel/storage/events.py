"""The audit trail: one ``memory_events`` row per change, in the caller's transaction."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from memory_kernel.models.enums import DecidedBy, EventKind, MemoryKind
from memory_kernel.storage.tables import memory_events

__all__ = ["Event", "event_row", "write_events"]


@dataclass(frozen=True, slots=True)
class Event:
    agent_id: str
    kind: MemoryKind
    memory_id: uuid.UUID
    event: EventKind
    decided_by: DecidedBy
    at: datetime
    reason: str | None = None
    score: float | None = None
    related_id: uuid.UUID | None = None
    details: Mapping[str, Any] = field(default_factory=dict)


def event_row(e: Event) -> dict[str, Any]:
    """The ``memory_events`` row of one event (a fresh id)."""
    return {
        "agent_id": e.agent_id,
        "id": uuid.uuid4(),
        "memory_kind": e.kind.value,
        "memory_id": e.memory_id,
        "event": e.event.value,
        "reason": e.reason,
        "score": e.score,
        "decided_by": e.decided_by.value,
        "related_id": e.related_id,
        "details": dict(e.details),
        "created_at": e.at,
    }


async def write_events(conn: AsyncConnection, events: Sequence[Event]) -> None:
    """Insert the events (one round trip); the caller owns the transaction."""
    if not events:
        return
    await conn.execute(memory_events.insert(), [event_row(e) for e in events])
