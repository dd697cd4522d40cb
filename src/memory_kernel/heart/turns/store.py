"""The SQL of turns: insert an exchange, read an episode's turns, count an agent's.

Functions take a connection, never commit, and always filter by ``agent_id`` (partition
pruning, invariant 1).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Text, bindparam, func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from memory_kernel.heart.extraction import store as extraction_store
from memory_kernel.storage.tables import turns

__all__ = ["StoredTurn", "by_episode", "insert"]

_c = turns.c
_INSERT = turns.insert()


@dataclass(frozen=True, slots=True)
class StoredTurn:
    id: uuid.UUID
    role: str
    content: str
    created_at: datetime


async def insert(
    conn: AsyncConnection, rows: Sequence[Mapping[str, Any]], *, queue_at: datetime | None = None
) -> None:
    """Store the rows of an exchange (``policy.rows``) in one statement; with ``queue_at``,
    the same statement queues them for fact extraction (``heart/extraction``)."""
    if not rows:
        return
    if queue_at is None:
        await conn.execute(_INSERT, list(rows))
        return
    stored = turns.insert().values(list(rows)).returning(_c.agent_id, _c.id).cte("stored")
    await conn.execute(extraction_store.enqueue_stored(stored), {"queued_at": queue_at})


_BY_EPISODE = (
    select(_c.id, _c.role, _c.content, _c.created_at)
    .where(
        _c.agent_id == bindparam("agent", type_=Text),
        _c.episode_id == bindparam("episode", type_=_c.episode_id.type),
    )
    .order_by(_c.created_at, _c.seq, _c.id)
)


async def by_episode(
    conn: AsyncConnection, *, agent_id: str, episode_id: uuid.UUID
) -> list[StoredTurn]:
    """The episode's turns in the order they were said."""
    found = await conn.execute(_BY_EPISODE, {"agent": agent_id, "episode": episode_id})
    return [StoredTurn(r.id, r.role, r.content, r.created_at) for r in found]


async def count(conn: AsyncConnection, *, agent_id: str) -> int:
    """How many turns the agent has."""
    stmt = select(func.count()).select_from(turns).where(_c.agent_id == agent_id)
    return int(await conn.scalar(stmt) or 0)
