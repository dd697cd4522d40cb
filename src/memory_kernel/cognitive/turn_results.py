"""The SQL of ``post_turn``'s once-only guarantee: claim a turn, read or store its result.

``claim`` is the first statement of ``post_turn``'s unit. ``INSERT … ON CONFLICT DO NOTHING``
on ``(agent_id, turn_id)``: a concurrent post of the same handle waits on the primary key
until the first one ends; if it committed, the conflict leaves the row alone and the stored
result is read in a statement of its own (a fresh snapshot, which sees that commit — the
claim's own snapshot predates it); if it rolled back, the insert goes through and this post
records the turn. Functions take the unit's connection and never commit.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from sqlalchemy import bindparam, delete, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncConnection

from memory_kernel.config import ConsolidationConfig
from memory_kernel.errors import ConflictError
from memory_kernel.models.turns import TurnHandle, TurnResult
from memory_kernel.storage.tables import turn_results

__all__ = ["check_age", "claim", "prune", "save"]

_c = turn_results.c
# (Bound names differ from the columns': SQLAlchemy reserves those in INSERT/UPDATE.)
_THIS = (_c.agent_id == bindparam("agent")) & (_c.turn_id == bindparam("turn"))
_CLAIM = (
    insert(turn_results)
    .values(agent_id=bindparam("agent"), turn_id=bindparam("turn"), created_at=bindparam("at"))
    .on_conflict_do_nothing(index_elements=[_c.agent_id, _c.turn_id])
    .returning(_c.turn_id)
)
_STORED = select(_c.result).where(_THIS)
_SAVE = turn_results.update().where(_THIS).values(result=bindparam("value"))
_PRUNE = delete(turn_results).where(
    (_c.agent_id == bindparam("agent")) & (_c.created_at < bindparam("before"))
)


def check_age(turn: TurnHandle, now: datetime, config: ConsolidationConfig) -> None:
    """``ConflictError`` for a handle begun more than ``turn_results_days`` ago: its result
    may have been pruned since it was recorded, so it is refused rather than perhaps
    recorded twice."""
    days = config.turn_results_days
    if turn.started_at < now - timedelta(days=days):
        raise ConflictError(
            f"turn {turn.turn_id} began {turn.started_at.isoformat()}, more than "
            f"turn_results_days ({days:g}) ago: too old to record safely"
        )


async def claim(
    conn: AsyncConnection, *, agent_id: str, turn_id: uuid.UUID, at: datetime
) -> TurnResult | None:
    """Claim the turn for this unit: ``None`` when it is ours to record, else the result a
    post of the same handle recorded before (after waiting for it if it is in progress)."""
    params = {"agent": agent_id, "turn": turn_id}
    if (await conn.execute(_CLAIM, {**params, "at": at})).first() is not None:
        return None
    stored = await conn.scalar(_STORED, params)
    if stored is None:  # never committed without its result (both are in one unit)
        raise ConflictError(f"turn {turn_id} is being recorded by another post_turn; retry")
    return TurnResult.model_validate(stored)


async def save(
    conn: AsyncConnection, *, agent_id: str, turn_id: uuid.UUID, result: TurnResult
) -> None:
    """Store the claimed turn's result, in the unit that wrote the turn."""
    params = {"agent": agent_id, "turn": turn_id, "value": result.model_dump(mode="json")}
    await conn.execute(_SAVE, params)


async def prune(conn: AsyncConnection, *, agent_id: str, before: datetime) -> int:
    """Forget the agent's turns recorded before ``before`` (``post_turn`` refuses their
    handles from then on); the number of rows deleted."""
    return (await conn.execute(_PRUNE, {"agent": agent_id, "before": before})).rowcount
