"""Writing a decided batch: one statement per agent (see ``learn_sql``), in one transaction."""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from memory_kernel.heart.facts.learn_sql import RowChange, Vector, write_agent
from memory_kernel.models.enums import DecidedBy, EventKind, MemoryKind
from memory_kernel.models.facts import Fact
from memory_kernel.storage.events import Event

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
    # Pending facts given their vector (the embedding queue), and those merged into another.
    embed: dict[uuid.UUID, Vector] = field(default_factory=dict)
    merge: dict[uuid.UUID, uuid.UUID] = field(default_factory=dict)


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


@dataclass(slots=True)
class _AgentWrites:
    changes: dict[uuid.UUID, RowChange] = field(default_factory=dict)
    rows: list[dict[str, Any]] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)

    def change(self, fact_id: uuid.UUID) -> RowChange:
        return self.changes.setdefault(fact_id, RowChange())


def _by_agent(writes: Writes, agent_of: dict[uuid.UUID, str]) -> dict[str, _AgentWrites]:
    """Split the writes per agent and merge every change to one stored fact into one."""
    out: dict[str, _AgentWrites] = {}

    def of(agent_id: str) -> _AgentWrites:
        return out.setdefault(agent_id, _AgentWrites())

    for row in writes.rows:
        of(row["agent_id"]).rows.append(row)
    for old, new in writes.supersede:
        of(agent_of[new]).change(old).superseded_by = new
    for old, new in writes.contradict:
        of(agent_of[new]).change(old).contradicts.append(new)
    for fact_id, times in writes.reinforce.items():
        change = of(agent_of[fact_id]).change(fact_id)
        change.reinforced += times
        change.derived_from.extend(writes.derived.get(fact_id, ()))
    for fact_id, vector in writes.embed.items():
        of(agent_of[fact_id]).change(fact_id).embedding = vector
    for fact_id, target in writes.merge.items():
        of(agent_of[fact_id]).change(fact_id).merged_into = target
    for event in writes.events:
        of(event.agent_id).events.append(event)
    return out


async def apply_writes(
    conn: AsyncConnection,
    writes: Writes,
    agent_of: dict[uuid.UUID, str],
    at: datetime,
    *,
    restore: dict[str, str] | None = None,
) -> dict[uuid.UUID, Fact]:
    """Apply the collected writes; returns the reinforced stored facts as they are now.
    ``restore``: planner settings to hand back to the caller's transaction."""
    refreshed: dict[uuid.UUID, Fact] = {}
    groups = _by_agent(writes, agent_of)
    if restore and not groups:
        groups[""] = _AgentWrites()  # nothing to write, but the settings still go back
    for n, (agent_id, group) in enumerate(sorted(groups.items())):
        refreshed |= await write_agent(
            conn, agent_id, changes=group.changes, rows=group.rows, events=group.events,
            now=at, restore=restore if n == 0 else None,
        )  # fmt: skip
    return refreshed
