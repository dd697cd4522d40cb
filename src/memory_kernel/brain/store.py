"""All SQL of decisions, and the session's decision lock.

Functions take the unit of work's connection and never commit. Every statement filters by
``agent_id`` (invariant 1, partition pruning). Statements run on every turn are built once,
with bound parameters.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import Row, Text, TextualSelect, bindparam, select, text
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.ext.asyncio import AsyncConnection

from memory_kernel.brain.dedup import RecentDecision
from memory_kernel.brain.review import GateReviewRequest
from memory_kernel.errors import NotFoundError
from memory_kernel.models.decisions import Decision
from memory_kernel.models.enums import DecisionOutcome, Stakes
from memory_kernel.runtime import Vector
from memory_kernel.storage import locks
from memory_kernel.storage.tables import decisions, episodes
from memory_kernel.storage.vector import as_array

__all__ = [
    "agents_to_review",
    "check_episode",
    "get",
    "get_for_update",
    "insert",
    "lock_session",
    "recent",
    "recent_for_dedup",
    "review_candidates",
    "to_decision",
    "update",
]

#: What a :class:`Decision` is read from: every column but the vector and the search text.
_COLUMNS = [c for c in decisions.c if c.name not in ("embedding", "search_tsv")]
_THIS = (decisions.c.agent_id == bindparam("agent_id")) & (
    decisions.c.id == bindparam("decision_id")
)

_INSERT = decisions.insert().returning(*_COLUMNS)
_GET = select(*_COLUMNS).where(_THIS)
_GET_FOR_UPDATE = select(*_COLUMNS, decisions.c.embedding).where(_THIS).with_for_update()
_RECENT_FOR_DEDUP = (
    select(decisions.c.id, decisions.c.description, decisions.c.embedding)
    .where(
        decisions.c.agent_id == bindparam("agent_id"),
        decisions.c.session_id == bindparam("session_id"),
        decisions.c.active.is_(True),
        # A decision with an outcome is a closed attempt: doing the same again is a new one.
        decisions.c.outcome.is_(None),
        decisions.c.created_at > bindparam("since"),
        decisions.c.id != bindparam("exclude"),
    )
    .order_by(decisions.c.created_at.desc(), decisions.c.id)
    .limit(bindparam("limit"))
)
_EPISODE = select(episodes.c.id).where(
    episodes.c.agent_id == bindparam("agent_id"), episodes.c.id == bindparam("episode_id")
)
# Layer 1's uncertain band, not yet read by a judge, as layer 1 left it: a recorded decision
# layer 1 passed, or a deliberation it rejected (the only layer that leaves one unfinalized
# with a mark).
_IN_BAND = (
    "d.metadata -> 'gate' -> 'judge' IS NULL"
    " AND (d.metadata -> 'gate' ->> 'p')::float8 BETWEEN :low AND :high"
    " AND CASE WHEN (d.metadata -> 'gate' ->> 'passed')::boolean"
    "  THEN d.active AND d.finalized ELSE NOT d.active AND NOT d.finalized END"
)
# With its exchange's two turns (both name it; found through the turns' episode index).
_REVIEW = text(
    "SELECT d.id, d.active, d.metadata -> 'gate' AS gate,"  # noqa: S608 - constants only
    " m.content AS message, r.content AS response"
    " FROM decisions d"
    " JOIN turns r ON r.agent_id = d.agent_id AND r.episode_id = d.episode_id AND r.seq = 1"
    "  AND r.metadata ->> 'decision_id' = d.id::text"
    " JOIN turns m ON m.agent_id = d.agent_id AND m.episode_id = d.episode_id AND m.seq = 0"
    "  AND m.metadata ->> 'decision_id' = d.id::text"
    f" WHERE d.agent_id = :agent_id AND {_IN_BAND}"
    " ORDER BY d.created_at, d.id LIMIT :limit"
).columns(gate=JSONB)
# No row has the nil UUID as id, so "exclude nothing" needs no second statement.
_NO_ID = uuid.UUID(int=0)


def to_decision(row: Row[*tuple[Any, ...]]) -> Decision:
    return Decision(
        id=row.id,
        agent_id=row.agent_id,
        session_id=row.session_id,
        episode_id=row.episode_id,
        description=row.description,
        reasoning=row.reasoning,
        confidence=row.confidence,
        stakes=Stakes(row.stakes),
        category=row.category,
        outcome=None if row.outcome is None else DecisionOutcome(row.outcome),
        frame=row.frame,
        active=row.active,
        finalized=row.finalized,
        rejection_reason=row.rejection_reason,
        metadata=dict(row.metadata),
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


async def lock_session(conn: AsyncConnection, *, agent_id: str, session_id: str) -> None:
    """Serialise the session's decision writes until the unit ends (re-entrant), so two
    concurrent starts cannot both find "no duplicate" and both insert."""
    await locks.lock(conn, "mk-decision", agent_id, session_id)


async def check_episode(conn: AsyncConnection, *, agent_id: str, episode_id: uuid.UUID) -> None:
    """``NotFoundError`` unless ``episode_id`` is an episode of ``agent_id``: a decision never
    points at another agent's episode, or at none. (Episodes are never deleted on their own,
    so one found here is still there at commit.)"""
    params = {"agent_id": agent_id, "episode_id": episode_id}
    if await conn.scalar(_EPISODE, params) is None:
        raise NotFoundError(f"no episode {episode_id} for agent {agent_id!r}")


async def insert(
    conn: AsyncConnection, fields: Mapping[str, Any], *, embedding: Vector | None, now: datetime
) -> Decision:
    """A new decision of ``fields`` (column values; a fresh id and timestamps added)."""
    values = {
        **fields,
        "id": uuid.uuid4(),
        "embedding": embedding,
        "created_at": now,
        "updated_at": now,
    }
    return to_decision((await conn.execute(_INSERT, values)).one())


async def get(conn: AsyncConnection, *, agent_id: str, decision_id: uuid.UUID) -> Decision:
    row = (await conn.execute(_GET, {"agent_id": agent_id, "decision_id": decision_id})).first()
    if row is None:
        raise NotFoundError(f"no decision {decision_id} for agent {agent_id!r}")
    return to_decision(row)


async def get_for_update(
    conn: AsyncConnection, *, agent_id: str, decision_id: uuid.UUID
) -> tuple[Decision, Vector | None]:
    """The decision and its stored vector, row-locked until the unit ends."""
    params = {"agent_id": agent_id, "decision_id": decision_id}
    row = (await conn.execute(_GET_FOR_UPDATE, params)).first()
    if row is None:
        raise NotFoundError(f"no decision {decision_id} for agent {agent_id!r}")
    return to_decision(row), as_array(row.embedding)


async def update(conn: AsyncConnection, decision: Decision, values: Mapping[str, Any]) -> Decision:
    """Set ``values`` on ``decision``'s row; the row as stored afterwards."""
    stmt = (
        decisions.update()
        .where(decisions.c.agent_id == decision.agent_id, decisions.c.id == decision.id)
        .values(**values)
        .returning(*_COLUMNS)
    )
    return to_decision((await conn.execute(stmt)).one())


async def recent(
    conn: AsyncConnection, *, agent_id: str, since: datetime, limit: int, session_id: str | None
) -> list[Decision]:
    """Active decisions of the agent (of one session, if given) created after ``since``."""
    stmt = select(*_COLUMNS).where(
        decisions.c.agent_id == agent_id,
        decisions.c.active.is_(True),
        decisions.c.created_at > since,
    )
    if session_id is not None:
        stmt = stmt.where(decisions.c.session_id == session_id)
    stmt = stmt.order_by(decisions.c.created_at.desc(), decisions.c.id).limit(limit)
    return [to_decision(r) for r in await conn.execute(stmt)]


async def recent_for_dedup(
    conn: AsyncConnection,
    *,
    agent_id: str,
    session_id: str,
    since: datetime,
    limit: int,
    exclude: uuid.UUID | None = None,
) -> list[RecentDecision]:
    """Active decisions of the session created after ``since`` without an outcome, newest
    first, with vectors."""
    params = {
        "agent_id": agent_id,
        "session_id": session_id,
        "since": since,
        "exclude": exclude or _NO_ID,
        "limit": limit,
    }
    rows = await conn.execute(_RECENT_FOR_DEDUP, params)
    return [
        RecentDecision(id=r.id, description=r.description, embedding=as_array(r.embedding))
        for r in rows
    ]


async def review_candidates(
    conn: AsyncConnection, *, agent_id: str, low: float, high: float, limit: int
) -> list[GateReviewRequest]:
    """Deliberations whose layer-1 probability lies in ``[low, high]``, not yet reviewed by
    a judge and as layer 1 left them, oldest first (``brain.review``)."""
    params = {"agent_id": agent_id, "low": low, "high": high, "limit": limit}
    return [
        GateReviewRequest(
            decision_id=r.id,
            agent_id=agent_id,
            message=r.message,
            response=r.response,
            recorded=r.active,
            gate=dict(r.gate),
        )
        for r in await conn.execute(_REVIEW, params)
    ]


def agents_to_review(low: float, high: float) -> TextualSelect:
    """The agents with deliberations in ``[low, high]`` to review (a scan of the decisions:
    no index, since without a judge every deliberation keeps its mark)."""
    stmt = text(f"SELECT d.agent_id FROM decisions d WHERE {_IN_BAND}")  # noqa: S608 - constants
    return stmt.bindparams(low=low, high=high).columns(agent_id=Text)
