"""The SQL of episodes: start (the agent's start lock, the session's ongoing episode, the
dedup window, insert or reuse), turns, use, get, the ongoing episodes a session end or an
idle sweep ends (or abandons), and search. The end's (admission) is in
``admission_store.py``.

Functions take a connection, never commit, and always filter by ``agent_id`` (partition
pruning, invariant 1). The statements of start and end are built once (or once per shape)
with bound parameters, so a call does not build a statement again. A write and its audit
row (``memory_events``) go together in one statement (data-modifying CTEs).

Bound parameters are never named like a column: SQLAlchemy adds an execution parameter
named like a column to an UPDATE's SET list.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import (
    ARRAY,
    BindParameter,
    DateTime,
    Float,
    Insert,
    Integer,
    Select,
    Table,
    Text,
    any_,
    bindparam,
    cast,
    exists,
    false,
    func,
    literal,
    null,
    select,
    true,
    union_all,
)
from sqlalchemy.engine import RowMapping
from sqlalchemy.ext.asyncio import AsyncConnection

from memory_kernel.heart.episodes.policy import OngoingEpisode
from memory_kernel.models.enums import AdmissionStatus, EpisodeStatus
from memory_kernel.models.episodes import Episode
from memory_kernel.runtime import Vector
from memory_kernel.storage import locks
from memory_kernel.storage.events import Event, event_row
from memory_kernel.storage.search import nearest
from memory_kernel.storage.tables import episodes, memory_events
from memory_kernel.storage.vector import Vector as VectorType
from memory_kernel.storage.vector import as_array

__all__ = [
    "COLUMNS",
    "abandon",
    "add_usage",
    "binds",
    "create",
    "event_insert",
    "event_params",
    "get",
    "idle_agents",
    "increment_turns",
    "lock_starts",
    "ongoing",
    "reuse",
    "search_text",
    "search_vector",
    "session_or_recent",
    "to_episode",
]

#: Every column a model needs (the vector and the tsvector stay in the database).
COLUMNS = [c for c in episodes.c if c.name not in ("embedding", "search_tsv")]
_c = episodes.c
_AGENT = bindparam("agent", type_=Text)
_ID = bindparam("episode", type_=_c.id.type)
_NOW = bindparam("now", type_=_c.updated_at.type)


def to_episode(m: RowMapping) -> Episode:
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


# -- audit rows inside a write ------------------------------------------------------------------


def binds(table: Table, prefix: str, names: Sequence[str]) -> dict[str, BindParameter[Any]]:
    """A bound parameter per column, typed as the column and named ``prefix + column``."""
    return {n: bindparam(f"{prefix}{n}", type_=table.c[n].type) for n in names}


def event_insert(prefix: str, source: Any) -> Insert:
    """Insert one audit row (parameters named ``prefix + column``), once per row of
    ``source``: written only if the change it records was."""
    values = binds(memory_events, prefix, [c.name for c in memory_events.c])
    return memory_events.insert().from_select(
        list(values), select(*values.values()).select_from(source)
    )


def event_params(prefix: str, event: Event) -> dict[str, Any]:
    """The bound values of one audit row (the row ``storage.events`` writes)."""
    return {f"{prefix}{k}": v for k, v in event_row(event).items()}


# -- start -------------------------------------------------------------------------------------


async def lock_starts(conn: AsyncConnection, agent_id: str) -> None:
    """Serialise the agent's starts until the transaction ends: statements run after this
    see every start the lock's previous holder committed."""
    await locks.lock(conn, "mk-episode-start", agent_id)


@functools.cache
def _create(keys: tuple[str, ...]) -> Select[Any]:
    """Insert an episode with the columns ``keys`` (as ``policy.new_row`` gives them) and
    its audit row."""
    values = binds(episodes, "n_", keys)
    new = (
        episodes.insert()
        .from_select(list(values), select(*values.values()))
        .returning(*COLUMNS)
        .cte("new")
    )
    return select(new).add_cte(event_insert("e_", new).cte("started"))


async def create(conn: AsyncConnection, row: Mapping[str, Any], event: Event) -> Episode:
    """Insert a new episode (``row`` as ``policy.new_row`` makes it) and its event."""
    params = {f"n_{k}": v for k, v in row.items()}
    params.update(event_params("e_", event))
    return to_episode((await conn.execute(_create(tuple(row)), params)).one()._mapping)


def _on_ongoing(changed: str, audited: str, **values: Any) -> Select[Any]:
    """Update the agent's episode ``_ID`` with ``values`` only while it is still ongoing (an
    end may have completed it since it was read), and write its event only if it was."""
    row = (
        episodes.update()
        .where(_c.agent_id == _AGENT, _c.id == _ID, _c.status == EpisodeStatus.ONGOING.value)
        .values(**values)
        .returning(*COLUMNS)
        .cte(changed)
    )
    return select(row).add_cte(event_insert("e_", row).cte(audited))


async def _audited(
    conn: AsyncConnection,
    stmt: Select[Any],
    *,
    agent_id: str,
    episode_id: uuid.UUID,
    now: datetime,
    event: Event,
) -> Episode | None:
    """Run an ``_on_ongoing`` statement: the episode, or ``None`` when it was no longer
    ongoing (nothing written)."""
    params = {"agent": agent_id, "episode": episode_id, "now": now}
    params.update(event_params("e_", event))
    row = (await conn.execute(stmt, params)).first()
    return None if row is None else to_episode(row._mapping)


_REUSE = _on_ongoing("touched", "reused", updated_at=_NOW, indexed=false())


async def reuse(
    conn: AsyncConnection, *, agent_id: str, episode_id: uuid.UUID, now: datetime, event: Event
) -> Episode | None:
    """Touch the ongoing episode a start duplicates and record the reuse; ``None`` when it is
    no longer ongoing (nothing written)."""
    return await _audited(
        conn, _REUSE, agent_id=agent_id, episode_id=episode_id, now=now, event=event
    )


# -- the session's episode, ongoing episodes, abandon ------------------------------------------

_SINCE = bindparam("since", type_=DateTime(timezone=True))
_ONGOING = _c.status == EpisodeStatus.ONGOING.value
_OF_SESSION = (
    select(_c.id)
    .where(
        _c.agent_id == _AGENT,
        _c.session_id == bindparam("session", type_=Text),
        _ONGOING,
        _c.updated_at >= _SINCE,
    )
    .order_by(_c.started_at.desc(), _c.id)
    .limit(1)
    .scalar_subquery()
)
# Touched, so the idle clock restarts; no audit row: nothing is decided, the session goes on.
_CONTINUE = (
    episodes.update()
    .where(_c.agent_id == _AGENT, _c.id == _OF_SESSION, _ONGOING)
    .values(updated_at=_NOW)
    .returning(*COLUMNS)
)


# Else, in the same round trip, the agent's ongoing episodes started at or after ``window``
# (newest first, a range scan of the (agent_id, status, started_at) btree), which a new start
# is deduplicated against; a NULL vector makes every similarity NULL.
_TOUCHED = _CONTINUE.cte("touched")
_START_READ = union_all(
    select(*_TOUCHED.c, cast(null(), Float).label("similarity"), true().label("touched")),
    select(*COLUMNS, (1 - _c.embedding.cosine_distance(bindparam("vector", type_=VectorType())))
           .label("similarity"), false().label("touched"))
    .where(_c.agent_id == _AGENT, _ONGOING, ~exists(select(_TOUCHED.c.id)),
           _c.started_at >= bindparam("window", type_=DateTime(timezone=True)))
    .order_by(_c.started_at.desc(), _c.id)
    .limit(bindparam("limit", type_=Integer)),
)  # fmt: skip


async def session_or_recent(
    conn: AsyncConnection, *, agent_id: str, session_id: str, since: datetime, now: datetime,
    window: datetime, vector: Vector | None, limit: int,
) -> tuple[Episode | None, list[OngoingEpisode]]:  # fmt: skip
    """The session's ongoing episode last active at or after ``since``, touched; else the
    agent's ongoing episodes started at or after ``window`` (at most ``limit``, newest
    first), with their similarity to ``vector``. One statement."""
    params = {"agent": agent_id, "session": session_id, "since": since, "now": now,
              "window": window, "vector": vector, "limit": limit}  # fmt: skip
    rows = (await conn.execute(_START_READ, params)).all()
    touched = next((r for r in rows if r.touched), None)
    if touched is not None:
        return to_episode(touched._mapping), []
    recent = sorted(sorted(rows, key=lambda r: r.id), key=lambda r: r.started_at, reverse=True)
    return None, [
        OngoingEpisode(r.id, r.summary, None if r.similarity is None else float(r.similarity))
        for r in recent
    ]


async def idle_agents(conn: AsyncConnection, *, idle_before: datetime, limit: int) -> list[str]:
    """Agents with an ongoing episode last active before ``idle_before`` (the sweeper's)."""
    stmt = select(_c.agent_id).where(_ONGOING, _c.updated_at < idle_before).distinct()
    return list((await conn.scalars(stmt.limit(limit))).all())


async def ongoing(
    conn: AsyncConnection,
    *,
    agent_id: str,
    session_id: str | None = None,
    idle_before: datetime | None = None,
    limit: int = 1000,
) -> list[Episode]:
    """The agent's ongoing episodes — of ``session_id``, or last active before
    ``idle_before`` — oldest first."""
    stmt = select(*COLUMNS).where(_c.agent_id == agent_id, _ONGOING)
    if session_id is not None:
        stmt = stmt.where(_c.session_id == session_id)
    if idle_before is not None:
        stmt = stmt.where(_c.updated_at < idle_before)
    rows = await conn.execute(stmt.order_by(_c.started_at, _c.id).limit(limit))
    return [to_episode(r._mapping) for r in rows]


_ABANDON = _on_ongoing(
    "gone",
    "abandoned",
    status=EpisodeStatus.ABANDONED.value,
    admission=AdmissionStatus.NOT_ADMITTED.value,
    ended_at=_NOW,
    updated_at=_NOW,
)


async def abandon(
    conn: AsyncConnection, *, agent_id: str, episode_id: uuid.UUID, now: datetime, event: Event
) -> Episode | None:
    """End an ongoing episode in which no turn was completed: abandoned, never admitted
    (with its audit row); ``None`` when it was no longer ongoing (nothing written)."""
    return await _audited(
        conn, _ABANDON, agent_id=agent_id, episode_id=episode_id, now=now, event=event
    )


# -- turns, use, get ---------------------------------------------------------------------------

_TURNS = (
    episodes.update()
    .where(_c.agent_id == _AGENT, _c.id == _ID)
    .values(
        metadata=_c.metadata.op("||")(
            func.jsonb_build_object(
                literal("turns", Text), func.coalesce(_c.metadata["turns"].as_integer(), 0) + 1
            )
        ),
        updated_at=_NOW,
    )
)


async def increment_turns(
    conn: AsyncConnection, *, agent_id: str, episode_id: uuid.UUID, now: datetime
) -> bool:
    """Count a turn in ``metadata["turns"]``; ``False`` when there is no such episode."""
    result = await conn.execute(_TURNS, {"agent": agent_id, "episode": episode_id, "now": now})
    return result.rowcount == 1


_USE = (
    episodes.update()
    .where(_c.agent_id == _AGENT, _c.id == any_(bindparam("ids", type_=ARRAY(_c.id.type))))
    .values(usage_count=_c.usage_count + 1, updated_at=_NOW)
)


async def add_usage(
    conn: AsyncConnection, *, agent_id: str, episode_ids: Sequence[uuid.UUID], now: datetime
) -> int:
    result = await conn.execute(_USE, {"agent": agent_id, "ids": list(episode_ids), "now": now})
    return result.rowcount


_GET = select(*COLUMNS, _c.embedding).where(_c.agent_id == _AGENT, _c.id == _ID)


async def get(
    conn: AsyncConnection, *, agent_id: str, episode_id: uuid.UUID
) -> tuple[Episode, Vector | None] | None:
    """The episode and its stored vector, or ``None``."""
    row = (await conn.execute(_GET, {"agent": agent_id, "episode": episode_id})).first()
    return None if row is None else (to_episode(row._mapping), as_array(row.embedding))


# -- search ------------------------------------------------------------------------------------


_COMPLETED = (_c.status == EpisodeStatus.COMPLETED.value,)  # one object: built once


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
        where=_COMPLETED,
        columns=COLUMNS,
    )
    return [(to_episode(r._mapping), 1.0 - float(r.distance)) for r in rows]


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
    return [to_episode(r._mapping) for r in rows]
