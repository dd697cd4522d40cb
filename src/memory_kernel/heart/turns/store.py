"""The SQL of turns: insert an exchange, read an episode's turns and the turn that follows
each of some turns, count an agent's.

Functions take a connection, never commit, and always filter by ``agent_id`` (partition
pruning, invariant 1).
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import DateTime, Integer, Text, TextClause, bindparam, func, select, text
from sqlalchemy.dialects.postgresql import ARRAY, UUID
from sqlalchemy.ext.asyncio import AsyncConnection

from memory_kernel.heart.extraction import store as extraction_store
from memory_kernel.storage.tables import turns

__all__ = ["StoredTurn", "by_episode", "insert", "next_turns"]

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
    params: dict[str, Any] = {"queued_at": queue_at}
    for i, row in enumerate(rows):
        params |= {f"{key}_{i}": value for key, value in row.items()}
    await conn.execute(_insert_queued(tuple(rows[0]), len(rows)), params)


@functools.cache
def _insert_queued(keys: tuple[str, ...], n: int) -> TextClause:
    """``WITH stored AS (INSERT INTO turns … RETURNING agent_id, id) INSERT INTO
    extraction_queue …`` for ``n`` rows of these columns, as text built once per shape: a
    multi-row ``insert().values([...])`` construct is compiled afresh at every call
    (SQLAlchemy does not cache it), which cost more than the round trip it saves."""
    # The columns are the turns table's own (``turns.c[k]`` raises for any other name).
    types = [bindparam(f"{k}_{i}", type_=turns.c[k].type) for i in range(n) for k in keys]
    rows = ", ".join("(" + ", ".join(f":{k}_{i}" for k in keys) + ")" for i in range(n))
    sql = (
        f"WITH stored AS (INSERT INTO turns ({', '.join(keys)}) VALUES {rows}"  # noqa: S608
        " RETURNING agent_id, id) " + extraction_store.ENQUEUE_STORED
    )
    return text(sql).bindparams(*types, bindparam("queued_at", type_=DateTime(timezone=True)))


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


@functools.cache
def _next_statement() -> TextClause:
    # Written as text: a LATERAL join with a row comparison reads plainly in SQL. An
    # exchange's message and reply share their time and are told apart by ``seq``.
    return text(
        """
        SELECT q.id AS asked, r.id, r.role, r.content, r.created_at, r.seq
        FROM turns AS q
        CROSS JOIN LATERAL (
            SELECT n.id, n.role, n.content, n.created_at, n.seq
            FROM turns AS n
            WHERE n.agent_id = q.agent_id
              AND n.episode_id = q.episode_id
              AND (n.created_at, n.seq) > (q.created_at, q.seq)
            ORDER BY n.created_at, n.seq
            LIMIT :count
        ) AS r
        WHERE q.agent_id = :agent AND q.id = ANY(:ids) AND q.episode_id IS NOT NULL
        ORDER BY q.id, r.created_at, r.seq
        """
    ).bindparams(
        bindparam("agent", type_=Text),
        bindparam("ids", type_=ARRAY(UUID(as_uuid=True))),
        bindparam("count", type_=Integer),
    )


async def next_turns(
    conn: AsyncConnection, *, agent_id: str, turn_ids: Sequence[uuid.UUID], count: int
) -> dict[uuid.UUID, list[StoredTurn]]:
    """The ``count`` turns that follow each of ``turn_ids`` in its episode, in order (fewer
    near its end; a turn without words ends the run), on the ``(agent_id, episode_id)``
    index."""
    if not turn_ids or count < 1:
        return {}
    params: dict[str, Any] = {"agent": agent_id, "ids": list(turn_ids), "count": count}
    rows = (await conn.execute(_next_statement(), params)).all()
    found: dict[uuid.UUID, list[StoredTurn]] = {}
    ended: set[uuid.UUID] = set()
    for r in rows:  # by asked turn, then in the order they follow it
        if r.asked in ended:
            continue
        if not str(r.content).strip():
            ended.add(r.asked)
            continue
        found.setdefault(r.asked, []).append(StoredTurn(r.id, r.role, r.content, r.created_at))
    return found
