"""Episode rows: the SQL of the episodes service. Functions take a connection, never commit,
and always filter by ``agent_id`` (partition pruning, invariant 1)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt
from sqlalchemy import Text, cast, func, literal, select
from sqlalchemy.ext.asyncio import AsyncConnection

from memory_kernel.heart.episodes.dedup import OngoingEpisode
from memory_kernel.models.enums import AdmissionStatus, EpisodeStatus
from memory_kernel.models.episodes import Episode
from memory_kernel.storage.search import AnyRow, nearest
from memory_kernel.storage.tables import episodes

__all__ = [
    "COLUMNS",
    "add_usage",
    "candidates",
    "get",
    "increment_turns",
    "insert",
    "lock",
    "recent_ongoing",
    "repoint",
    "search_text",
    "search_vector",
    "to_episode",
    "update",
]

Vector = npt.NDArray[np.float32]

#: Every column a model needs (the vector and the tsvector stay in the database).
COLUMNS = [c for c in episodes.c if c.name not in ("embedding", "search_tsv")]
_c = episodes.c


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


def _advisory(purpose: str, agent_id: str) -> Any:
    return func.pg_advisory_xact_lock(func.hashtext(f"mk-episode-{purpose}:{agent_id}"))


async def lock(conn: AsyncConnection, purpose: str, agent_id: str) -> None:
    """Serialise ``purpose`` per agent until the transaction ends (other agents never wait)."""
    await conn.execute(select(_advisory(purpose, agent_id)))


async def recent_ongoing(
    conn: AsyncConnection,
    *,
    agent_id: str,
    since: datetime,
    vector: Vector | None,
    limit: int,
) -> list[OngoingEpisode]:
    """The agent's ongoing episodes started at or after ``since``, newest first."""
    similarity: Any = (
        (1 - _c.embedding.cosine_distance(vector)).label("similarity")
        if vector is not None
        else literal(None).label("similarity")
    )
    rows = await conn.execute(
        select(_c.id, _c.summary, similarity)
        .where(
            _c.agent_id == agent_id,
            _c.status == EpisodeStatus.ONGOING.value,
            _c.started_at >= since,
        )
        .order_by(_c.started_at.desc(), _c.id)
        .limit(limit)
    )
    return [
        OngoingEpisode(r.id, r.summary, None if r.similarity is None else float(r.similarity))
        for r in rows
    ]


async def insert(conn: AsyncConnection, values: Mapping[str, Any]) -> Episode:
    row = (await conn.execute(episodes.insert().values(**values).returning(*COLUMNS))).one()
    return to_episode(row)


async def get(
    conn: AsyncConnection,
    *,
    agent_id: str,
    episode_id: uuid.UUID,
    for_update: bool = False,
    lock: str | None = None,
) -> tuple[Episode, Vector | None] | None:
    """The episode and its stored vector, or ``None``.

    ``lock`` also takes the agent's advisory lock for that purpose in the same round trip;
    statements after this one see everything committed by the lock's previous holder.
    """
    stmt = select(*COLUMNS, _c.embedding).where(_c.agent_id == agent_id, _c.id == episode_id)
    if lock is not None:
        stmt = stmt.add_columns(_advisory(lock, agent_id))
    if for_update:
        stmt = stmt.with_for_update()
    row = (await conn.execute(stmt)).first()
    if row is None:
        return None
    return to_episode(row), _as_array(row.embedding)


def _as_array(value: Any) -> Vector | None:
    # asyncpg + pgvector hand back a pgvector ``Vector`` (or an ndarray, by version).
    if value is None:
        return None
    raw = value.to_numpy() if hasattr(value, "to_numpy") else value
    return np.asarray(raw, dtype=np.float32)


async def update(
    conn: AsyncConnection, *, agent_id: str, episode_id: uuid.UUID, values: Mapping[str, Any]
) -> Episode:
    row = (
        await conn.execute(
            episodes.update()
            .where(_c.agent_id == agent_id, _c.id == episode_id)
            .values(**values)
            .returning(*COLUMNS)
        )
    ).one()
    return to_episode(row)


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


async def candidates(
    conn: AsyncConnection,
    *,
    agent_id: str,
    vector: Vector,
    exclude: uuid.UUID,
    k: int,
    min_similarity: float,
) -> list[tuple[Episode, float]]:
    """The admission candidates: up to ``k`` admitted, completed episodes other than
    ``exclude`` with similarity at least ``min_similarity``, most similar first."""
    rows = await nearest(
        conn,
        episodes,
        agent_id=agent_id,
        vector=vector,
        k=k,
        where=[_c.status == EpisodeStatus.COMPLETED.value, _c.id != exclude],
        columns=COLUMNS,
    )
    found = [(to_episode(r), 1.0 - float(r.distance)) for r in rows]
    return [(ep, sim) for ep, sim in found if sim >= min_similarity]


async def repoint(
    conn: AsyncConnection, *, agent_id: str, old: uuid.UUID, new: uuid.UUID, now: datetime
) -> int:
    """Move the members of ``old``'s merge group to the canonical ``new``."""
    result = await conn.execute(
        episodes.update()
        .where(_c.agent_id == agent_id, _c.canonical_id == old)
        .values(canonical_id=new, updated_at=now)
    )
    return result.rowcount


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
