"""Writing a decided batch: the bulk statements and the audit events, in one transaction."""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from memory_kernel.heart.facts import repository as repo
from memory_kernel.models.enums import DecidedBy, EventKind, MemoryKind
from memory_kernel.models.facts import Fact
from memory_kernel.storage.events import Event, write_events

__all__ = ["Writes", "apply_writes", "fact_event"]


@dataclass(slots=True)
class Writes:
    """Everything a decided batch will write, collected before the first statement."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    supersede: list[tuple[uuid.UUID, uuid.UUID]] = field(default_factory=list)
    contradict: list[tuple[uuid.UUID, uuid.UUID]] = field(default_factory=list)
    reinforce: Counter[uuid.UUID] = field(default_factory=Counter)
    derived: dict[uuid.UUID, list[uuid.UUID]] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)


def fact_event(
    agent_id: str, fact_id: uuid.UUID, kind: EventKind, at: datetime, reason: str, **extra: Any
) -> Event:
    return Event(
        agent_id=agent_id,
        kind=MemoryKind.FACT,
        memory_id=fact_id,
        event=kind,
        decided_by=DecidedBy.RULE,
        at=at,
        reason=reason,
        score=extra.pop("score", None),
        related_id=extra.pop("related_id", None),
        details=extra,
    )


async def apply_writes(
    conn: AsyncConnection, writes: Writes, agent_of: dict[uuid.UUID, str], at: datetime
) -> dict[uuid.UUID, Fact]:
    """Apply the collected writes; returns the reinforced stored facts as they are now."""
    by_agent: dict[str, list[tuple[uuid.UUID, uuid.UUID]]] = {}
    for old, new in writes.supersede:
        by_agent.setdefault(agent_of[new], []).append((old, new))
    # Retire first: the new rows may take over a subject key (one current fact per subject).
    for agent_id, pairs in by_agent.items():
        await repo.supersede(conn, agent_id, pairs, at)
    await repo.insert_facts(conn, writes.rows)
    links: dict[str, list[tuple[uuid.UUID, uuid.UUID]]] = {}
    for old, new in writes.contradict:
        links.setdefault(agent_of[new], []).append((old, new))
    for agent_id, pairs in links.items():
        await repo.link_contradictions(conn, agent_id, pairs, at)
    refreshed: dict[uuid.UUID, Fact] = {}
    for fact_id, times in writes.reinforce.items():
        refreshed[fact_id] = await repo.reinforce(
            conn, agent_of[fact_id], fact_id, times=times, now=at,
            derived_from=writes.derived.get(fact_id, ()),
        )  # fmt: skip
    await write_events(conn, writes.events)
    return refreshed
