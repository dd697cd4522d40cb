"""The SQL of the extraction queue: enqueue (inside the turns' insert), list due agents,
claim, settle, fail, count.

Functions take a connection and never commit; every statement names the agent. A claim is
two short statements in one transaction (under the agent's ``mk-extract`` lock, so two
drains of one agent take turns): the agent's oldest queued rows, ``FOR UPDATE SKIP LOCKED``
(a row another transaction is settling is skipped, never waited for), then the taken ones
get the drain's token, one more attempt and a lease. Settling deletes the rows still holding
the token, in the unit of work that learns their facts.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import and_, bindparam, func, select
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.asyncio import AsyncConnection

from memory_kernel.heart.extraction.policy import Queued
from memory_kernel.models.extraction import ExtractionQueueState, ExtractionTurn
from memory_kernel.storage import locks
from memory_kernel.storage.tables import episodes, extraction_queue, turns

__all__ = [
    "LOCK_SCOPE",
    "Claimed",
    "Failure",
    "claim",
    "counts",
    "due_agents",
    "fail",
    "lock_agent",
    "mark_claimed",
    "settle",
    "unpark",
]

LOCK_SCOPE = "mk-extract"
_q, _t, _e = extraction_queue.c, turns.c, episodes.c
_IDS = ARRAY(_q.turn_id.type)

#: The tail of a statement that stores turns in a CTE ``stored`` (``agent_id``, ``id``) and
#: queues them in the same round trip (``post_turn``: ``heart.turns.store``); binds
#: ``queued_at``.
ENQUEUE_STORED = (
    "INSERT INTO extraction_queue (agent_id, turn_id, enqueued_at, due_at)"
    " SELECT agent_id, id, :queued_at, :queued_at FROM stored"
)


async def due_agents(conn: AsyncConnection, now: datetime, limit: int) -> list[str]:
    """Agents with a turn due now, the longest-waiting first."""
    stmt = (
        select(_q.agent_id)
        .where(_q.parked_at.is_(None), _q.due_at <= now)
        .group_by(_q.agent_id)
        .order_by(func.min(_q.due_at), _q.agent_id)
        .limit(limit)
    )
    return [str(a) for a in (await conn.scalars(stmt)).all()]


async def lock_agent(conn: AsyncConnection, agent_id: str) -> None:
    """Serialise the claims of one agent's queue until the transaction ends."""
    await locks.lock(conn, LOCK_SCOPE, agent_id)


_CLAIM = (
    select(
        _q.turn_id,
        _q.due_at,
        _q.attempts,
        _t.id.label("stored"),
        _t.session_id,
        _t.episode_id,
        _t.role,
        _t.content,
        _t.created_at,
        _e.id.label("episode"),
    )
    .select_from(
        extraction_queue.outerjoin(
            turns, and_(_t.agent_id == _q.agent_id, _t.id == _q.turn_id)
        ).outerjoin(episodes, and_(_e.agent_id == _q.agent_id, _e.id == _t.episode_id))
    )
    .where(_q.agent_id == bindparam("agent"), _q.parked_at.is_(None))
    # Exchange by exchange (post_turn queues one at a time), each in the order it was said.
    .order_by(_q.enqueued_at, _t.created_at, _t.seq, _q.turn_id)
    .limit(bindparam("n"))
    .with_for_update(of=extraction_queue, skip_locked=True)
)


@dataclass(frozen=True, slots=True)
class Claimed:
    """A claimed row: the queue's view (``Queued``) and whether the turn's episode exists."""

    queued: Queued
    episode_exists: bool


async def claim(conn: AsyncConnection, agent_id: str, n: int) -> list[Claimed]:
    """The agent's ``n`` oldest queued rows nobody is settling, locked, oldest first."""
    found = []
    for r in await conn.execute(_CLAIM, {"agent": agent_id, "n": n}):
        turn = None
        if r.stored is not None:
            turn = ExtractionTurn(
                agent_id=agent_id,
                session_id=r.session_id,
                turn_id=r.turn_id,
                episode_id=r.episode_id,
                role=r.role,
                text=r.content,
                said_at=r.created_at,
            )
        queued = Queued(turn_id=r.turn_id, due_at=r.due_at, attempts=r.attempts, turn=turn)
        found.append(Claimed(queued, r.episode is not None))
    return found


_MARK = (
    extraction_queue.update()
    .where(_q.agent_id == bindparam("agent"), _q.turn_id == func.any(bindparam("ids", type_=_IDS)))
    .values(claim=bindparam("token"), attempts=_q.attempts + 1, due_at=bindparam("lease"))
)


async def mark_claimed(
    conn: AsyncConnection,
    agent_id: str,
    turn_ids: Sequence[uuid.UUID],
    *,
    token: uuid.UUID,
    lease_until: datetime,
) -> None:
    """The taken rows belong to the drain ``token`` until ``lease_until``: one more attempt."""
    await conn.execute(
        _MARK, {"agent": agent_id, "ids": list(turn_ids), "token": token, "lease": lease_until}
    )


_SETTLE = (
    extraction_queue.delete()
    .where(_q.agent_id == bindparam("agent"), _q.claim == bindparam("token"))
    .returning(_q.turn_id)
)


async def settle(conn: AsyncConnection, agent_id: str, token: uuid.UUID) -> set[uuid.UUID]:
    """Delete the rows the drain ``token`` still holds; returns their turn ids (a row whose
    lease ran out and that another drain claimed is no longer this one's to settle)."""
    rows = await conn.scalars(_SETTLE, {"agent": agent_id, "token": token})
    return set(rows.all())


@dataclass(frozen=True, slots=True)
class Failure:
    """What a failed attempt writes on one row."""

    turn_id: uuid.UUID
    due_at: datetime
    parked_at: datetime | None


_FAIL = (
    extraction_queue.update()
    .where(
        _q.agent_id == bindparam("agent"),
        _q.turn_id == bindparam("turn"),
        _q.claim == bindparam("token"),
    )
    .values(
        claim=None,
        last_error=bindparam("error"),
        due_at=bindparam("due"),
        parked_at=bindparam("parked"),
    )
)


async def fail(
    conn: AsyncConnection,
    agent_id: str,
    token: uuid.UUID,
    failures: Iterable[Failure],
    error: str,
) -> None:
    """Record a failed attempt on the rows the drain ``token`` still holds."""
    params = [
        {
            "agent": agent_id,
            "turn": f.turn_id,
            "token": token,
            "error": error,
            "due": f.due_at,
            "parked": f.parked_at,
        }
        for f in failures
    ]
    if params:
        await conn.execute(_FAIL, params)


async def counts(conn: AsyncConnection, agent_id: str) -> ExtractionQueueState:
    """The agent's queue at a glance."""
    waiting = _q.parked_at.is_(None)
    row = (
        await conn.execute(
            select(
                func.count().filter(waiting).label("queued"),
                func.count().filter(waiting, _q.last_error.is_not(None)).label("retrying"),
                func.count().filter(_q.parked_at.is_not(None)).label("parked"),
            ).where(_q.agent_id == agent_id)
        )
    ).one()
    last = await conn.scalar(
        select(_q.last_error)
        .where(_q.agent_id == agent_id, _q.last_error.is_not(None))
        .order_by(_q.due_at.desc())
        .limit(1)
    )
    return ExtractionQueueState(
        queued=int(row.queued),
        retrying=int(row.retrying),
        parked=int(row.parked),
        last_error=last,
    )


async def unpark(conn: AsyncConnection, agent_id: str, now: datetime) -> int:
    """The agent's parked turns queued again, due ``now`` with no attempt counted; how many."""
    stmt = (
        extraction_queue.update()
        .where(_q.agent_id == agent_id, _q.parked_at.is_not(None))
        .values(parked_at=None, attempts=0, due_at=now, last_error=None)
    )
    return (await conn.execute(stmt)).rowcount
