"""Episode rows: the reads (and small updates) of the episodes service. Functions take a
connection, never commit, and always filter by ``agent_id`` (partition pruning, invariant 1).

The statements of the hot paths (start, end) are built once, with bound parameters, and
run on the driver (``storage.driver.core`` compiles each statement object once): building
and compiling a SQLAlchemy statement on every call cost more client CPU than the database
spent running it. The reads of admission (end) are in ``admission_sql.py``, the writes in
``writes.py``.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    BindParameter,
    DateTime,
    Integer,
    Select,
    Text,
    bindparam,
    cast,
    func,
    literal,
    select,
    true,
)
from sqlalchemy.ext.asyncio import AsyncConnection

from memory_kernel.heart.episodes.dedup import OngoingEpisode
from memory_kernel.heart.episodes.vectors import Vector
from memory_kernel.models.enums import AdmissionStatus, EpisodeStatus
from memory_kernel.models.episodes import Episode
from memory_kernel.storage import locks
from memory_kernel.storage.driver import core
from memory_kernel.storage.search import AnyRow, nearest
from memory_kernel.storage.tables import episodes
from memory_kernel.storage.vector import Vector as VectorType
from memory_kernel.storage.vector import as_array

__all__ = [
    "COLUMNS",
    "add_usage",
    "get",
    "increment_turns",
    "recent_ongoing",
    "search_text",
    "search_vector",
    "start_opening",
    "to_episode",
    "window",
]

#: Every column a model needs (the vector and the tsvector stay in the database).
COLUMNS = [c for c in episodes.c if c.name not in ("embedding", "search_tsv")]
_c = episodes.c

_AGENT = bindparam("agent_id", type_=Text)
_ID = bindparam("episode_id", type_=_c.id.type)
_VECTOR = bindparam("vector", type_=VectorType())


def to_episode(row: AnyRow) -> Episode:
    m = row._mapping
    return Episode(
        id=m["id"],
        agent_id=m["agent_id"],
        session_id=m["session_id"],
        summary=m["summary"],
        status=EpisodeStatus(m["status"]),
        outcome=m["outcome"],
        admission=AdmissionStatus(m["admission"]),
        canonical=m["canonical"],
        canonical_id=m["canonical_id"],
        superseded_by=m["superseded_by"],
        references=tuple(m["references"]),
        artifacts=tuple(m["artifacts"]),
        usage_count=m["usage_count"],
        started_at=m["started_at"],
        ended_at=m["ended_at"],
        metadata=dict(m["metadata"]),
        created_at=m["created_at"],
        updated_at=m["updated_at"],
    )


def _lock_key(purpose: str, agent_id: str) -> int:
    return locks.lock_number(f"mk-episode-{purpose}", agent_id)


def start_opening(agent_id: str) -> list[str]:
    """What ``start``'s own transaction opens with: the agent's start lock (statements after
    it see every start its previous holder committed) and generic plans (see
    ``admission_sql.admission_opening``)."""
    return [
        locks.lock_statement("mk-episode-start", agent_id),
        "SET LOCAL plan_cache_mode = force_generic_plan",
    ]


_ADVISORY = func.pg_advisory_xact_lock(bindparam("lock_key", type_=BigInteger))
_GET = select(*COLUMNS, _c.embedding).where(_c.agent_id == _AGENT, _c.id == _ID)
_GET_FOR_UPDATE = _GET.with_for_update()


def window(agent: BindParameter[str], since: BindParameter[datetime]) -> list[Any]:
    """The dedup window: the agent's ongoing episodes started at or after ``since``."""
    return [
        _c.agent_id == agent,
        _c.status == EpisodeStatus.ONGOING.value,
        _c.started_at >= since,
    ]


_RECENT = (
    # A NULL vector makes every similarity NULL: one statement serves both cases.
    select(
        _c.id,
        _c.summary,
        _c.started_at,
        (1 - _c.embedding.cosine_distance(_VECTOR)).label("similarity"),
    )
    .where(*window(_AGENT, bindparam("since", type_=DateTime(timezone=True))))
    .order_by(_c.started_at.desc(), _c.id)
    .limit(bindparam("limit", type_=Integer))
)


def _build_lock_and_recent() -> Select[Any]:
    # The lock is taken in the outer side of a LEFT JOIN LATERAL, so it is taken exactly
    # once even when the window is empty (a lock in the select list runs once per row).
    taken = select(_ADVISORY.label("locked")).subquery("taken")
    recent = _RECENT.lateral("recent")
    return (
        select(recent.c.id, recent.c.summary, recent.c.similarity)
        .select_from(taken.outerjoin(recent, true()))
        .order_by(recent.c.started_at.desc(), recent.c.id)
    )


_LOCK_AND_RECENT = _build_lock_and_recent()


async def recent_ongoing(
    conn: AsyncConnection,
    *,
    agent_id: str,
    since: datetime,
    vector: Vector | None,
    limit: int,
    lock: str | None = None,
) -> list[OngoingEpisode]:
    """The agent's ongoing episodes started at or after ``since``, newest first (a range
    scan of the (agent_id, status, started_at) btree, not a vector search).

    ``lock`` also takes the agent's advisory lock for that purpose in the same round trip.
    Beware: this statement's snapshot is taken before it waits for the lock, so it may miss
    an episode the lock's previous holder committed meanwhile (see ``writes.create_in``).
    """
    params: dict[str, Any] = {"agent_id": agent_id, "since": since, "vector": vector}
    params["limit"] = limit
    stmt = _RECENT
    if lock is not None:
        stmt, params["lock_key"] = _LOCK_AND_RECENT, _lock_key(lock, agent_id)
    return [
        OngoingEpisode(r.id, r.summary, None if r.similarity is None else float(r.similarity))
        for r in await core(conn, stmt, params)
        if r.id is not None  # the lock's row when the window is empty
    ]


async def get(
    conn: AsyncConnection, *, agent_id: str, episode_id: uuid.UUID, for_update: bool = False
) -> tuple[Episode, Vector | None] | None:
    """The episode and its stored vector, or ``None``."""
    stmt = _GET_FOR_UPDATE if for_update else _GET
    rows = await core(conn, stmt, {"agent_id": agent_id, "episode_id": episode_id})
    return (to_episode(rows[0]), as_array(rows[0].embedding)) if rows else None


async def search_vector(
    conn: AsyncConnection, *, agent_id: str, vector: Vector, k: int
) -> list[tuple[Episode, float]]:
    """The ``k`` admitted, completed episodes nearest ``vector``, with their similarity
    (1 - cosine distance), most similar first."""
    rows = await nearest(
        conn,
        episodes,
        agent_id=agent_id,
        vector=vector,
        k=k,
        where=[_c.status == EpisodeStatus.COMPLETED.value],
        columns=COLUMNS,
    )
    return [(to_episode(r), 1.0 - float(r.distance)) for r in rows]


async def increment_turns(
    conn: AsyncConnection, *, agent_id: str, episode_id: uuid.UUID, now: datetime
) -> bool:
    turns = func.coalesce(_c.metadata["turns"].as_integer(), 0) + 1
    result = await conn.execute(
        episodes.update()
        .where(_c.agent_id == agent_id, _c.id == episode_id)
        .values(
            metadata=_c.metadata.op("||")(
                func.jsonb_build_object(cast(literal("turns"), Text), turns)
            ),
            updated_at=now,
        )
    )
    return result.rowcount == 1


async def add_usage(
    conn: AsyncConnection, *, agent_id: str, episode_ids: Sequence[uuid.UUID], now: datetime
) -> int:
    result = await conn.execute(
        episodes.update()
        .where(_c.agent_id == agent_id, _c.id.in_(list(episode_ids)))
        .values(usage_count=_c.usage_count + 1, updated_at=now)
    )
    return result.rowcount


async def search_text(conn: AsyncConnection, *, agent_id: str, query: str, k: int) -> list[Episode]:
    """Full-text fallback of search (the embedder is down): same admitted rows, by rank."""
    tsquery = func.websearch_to_tsquery("english", query)
    rank = func.ts_rank(_c.search_tsv, tsquery)
    rows = await conn.execute(
        select(*COLUMNS)
        .where(
            _c.agent_id == agent_id,
            _c.admission == AdmissionStatus.ACTIVE.value,
            _c.status == EpisodeStatus.COMPLETED.value,
            _c.search_tsv.op("@@")(tsquery),
        )
        .order_by(rank.desc(), _c.id)
        .limit(k)
    )
    return [to_episode(r) for r in rows]
