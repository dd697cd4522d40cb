"""SQL of consolidation. Functions take the caller's connection and never commit; every
query names one agent (partition pruning, invariant 1)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, func, select, text, update
from sqlalchemy.ext.asyncio import AsyncConnection

from memory_kernel.consolidation.plans import FactView, Pair
from memory_kernel.consolidation.policy import ConfidenceChange, ConfidenceState
from memory_kernel.models.enums import EventKind, FactStatus
from memory_kernel.storage.search import SEARCHABLE
from memory_kernel.storage.tables import facts, memory_events

__all__ = [
    "active_agents",
    "confidence_page",
    "evidence_pairs",
    "fact_views",
    "linked_pairs",
    "penalised_pairs",
    "searchable_count",
    "try_lock",
    "unlock",
    "vector_page",
    "write_confidence",
]

_ACTIVE = FactStatus.ACTIVE.value
# Two-key advisory locks: their own key space, apart from the one-key xact locks of learn.
_LOCK_SPACE = 0x4D4B43  # "MKC"


async def try_lock(conn: AsyncConnection, agent_id: str) -> bool:
    """Session-level try-lock of an agent's consolidation (held until :func:`unlock` or the
    session ends, so a crashed worker never keeps an agent locked)."""
    got = await conn.scalar(
        text("SELECT pg_try_advisory_lock(:space, hashtext(:agent))"),
        {"space": _LOCK_SPACE, "agent": agent_id},
    )
    await conn.commit()
    return bool(got)


async def unlock(conn: AsyncConnection, agent_id: str) -> None:
    await conn.execute(
        text("SELECT pg_advisory_unlock(:space, hashtext(:agent))"),
        {"space": _LOCK_SPACE, "agent": agent_id},
    )
    await conn.commit()


async def active_agents(conn: AsyncConnection) -> list[str]:
    """Agents with current facts (maintenance listing: ids only, nothing of their content)."""
    stmt = (
        select(facts.c.agent_id)
        .where(facts.c.status.in_([_ACTIVE, FactStatus.PENDING_EMBED.value]))
        .distinct()
        .order_by(facts.c.agent_id)
    )
    return [str(a) for a in (await conn.scalars(stmt)).all()]


async def set_ef_search(conn: AsyncConnection, ef: int) -> None:
    """Shorter HNSW candidate list for this transaction (near-duplicates are easy to find)."""
    await conn.execute(text("SELECT set_config('hnsw.ef_search', :ef, true)"), {"ef": str(ef)})


# ``SEARCHABLE["facts"]`` on the alias ``f``, written literally: the planner must see the
# HNSW index's predicate to use the index inside the LATERAL subquery.
_SEARCHABLE_F = "f.status = 'active' AND f.embedding IS NOT NULL"
assert _SEARCHABLE_F.replace("f.", "") == SEARCHABLE["facts"]

# -- evidence ---------------------------------------------------------------------------

_EPISODES_PAGE = text(
    "SELECT id, ended_at FROM episodes"
    " WHERE agent_id = :agent AND status = 'completed' AND embedding IS NOT NULL"
    " AND ended_at > :since AND id > :after ORDER BY id LIMIT :limit"
)

_EVIDENCE_SQL = (
    "SELECT e.id AS episode_id, e.ended_at, n.id AS fact_id"
    " FROM episodes e CROSS JOIN LATERAL ("
    "   SELECT f.id, f.last_evidence_at, f.derived_from,"
    "          f.embedding <=> e.embedding AS distance"
    "   FROM facts f WHERE f.agent_id = :agent"
    "   AND f.status = 'active' AND f.embedding IS NOT NULL"
    "   ORDER BY f.embedding <=> e.embedding LIMIT :k) AS n"
    " WHERE e.agent_id = :agent AND e.id = ANY(:ids)"
    " AND n.distance <= :max_distance AND n.last_evidence_at < e.ended_at"
    " AND NOT (e.id = ANY(n.derived_from))"
)  # fmt: skip
assert _SEARCHABLE_F in _EVIDENCE_SQL
_EVIDENCE = text(_EVIDENCE_SQL)


async def oldest_evidence(conn: AsyncConnection, agent_id: str) -> datetime | None:
    stmt = select(func.min(facts.c.last_evidence_at)).where(
        facts.c.agent_id == agent_id, facts.c.status == _ACTIVE
    )
    value = await conn.scalar(stmt)
    return value if isinstance(value, datetime) else None


async def episode_page(
    conn: AsyncConnection, agent_id: str, *, since: datetime, after: uuid.UUID, limit: int
) -> list[uuid.UUID]:
    rows = await conn.execute(
        _EPISODES_PAGE, {"agent": agent_id, "since": since, "after": after, "limit": limit}
    )
    return [r.id for r in rows]


async def evidence_pairs(
    conn: AsyncConnection,
    agent_id: str,
    episode_ids: Sequence[uuid.UUID],
    *,
    k: int,
    min_similarity: float,
) -> list[tuple[uuid.UUID, uuid.UUID, datetime]]:
    """(fact, episode, ended_at) for episodes that support facts they ended after."""
    if not episode_ids:
        return []
    rows = await conn.execute(
        _EVIDENCE,
        {"agent": agent_id, "ids": list(episode_ids), "k": k, "max_distance": 1 - min_similarity},
    )
    return [(r.fact_id, r.episode_id, r.ended_at) for r in rows]


# -- confidence ---------------------------------------------------------------------------


async def confidence_page(
    conn: AsyncConnection, agent_id: str, *, after: uuid.UUID, limit: int
) -> list[ConfidenceState]:
    stmt = (
        select(facts.c.id, facts.c.confidence, facts.c.last_evidence_at, facts.c.updated_at)
        .where(facts.c.agent_id == agent_id, facts.c.status == _ACTIVE, facts.c.id > after)
        .order_by(facts.c.id)
        .limit(limit)
    )
    return [
        ConfidenceState(r.id, r.confidence, r.last_evidence_at, r.updated_at)
        for r in await conn.execute(stmt)
    ]


_SET_CONFIDENCE = (
    update(facts)
    .where(
        facts.c.agent_id == bindparam("b_agent"),
        facts.c.id == bindparam("b_id"),
        facts.c.status == _ACTIVE,
    )
    .values(
        confidence=bindparam("b_conf"),
        last_evidence_at=bindparam("b_last"),
        evidence_count=facts.c.evidence_count + bindparam("b_n"),
        derived_from=func.array_cat(facts.c.derived_from, bindparam("b_derived")),
        updated_at=bindparam("b_now"),
    )
)


async def write_confidence(
    conn: AsyncConnection, agent_id: str, changes: Sequence[ConfidenceChange], now: datetime
) -> None:
    if not changes:
        return
    params = [
        {
            "b_agent": agent_id, "b_id": c.id, "b_conf": c.after, "b_last": c.last_evidence_at,
            "b_n": len(c.evidence), "b_derived": list(c.evidence), "b_now": now,
        }
        for c in changes
    ]  # fmt: skip
    await conn.execute(_SET_CONFIDENCE, params)


# -- candidates ---------------------------------------------------------------------------


async def searchable_count(conn: AsyncConnection, agent_id: str) -> int:
    stmt = select(func.count()).where(facts.c.agent_id == agent_id, text(SEARCHABLE["facts"]))
    return int(await conn.scalar(stmt) or 0)


async def vector_page(
    conn: AsyncConnection, agent_id: str, *, after: uuid.UUID, limit: int
) -> tuple[list[uuid.UUID], list[Any]]:
    """The next ``limit`` searchable facts by id: their ids and vectors (numpy arrays)."""
    stmt = (
        select(facts.c.id, facts.c.embedding)
        .where(facts.c.agent_id == agent_id, text(SEARCHABLE["facts"]), facts.c.id > after)
        .order_by(facts.c.id)
        .limit(limit)
    )
    rows = (await conn.execute(stmt)).all()
    return [r.id for r in rows], [_array(r.embedding) for r in rows]


def _array(value: Any) -> Any:
    # pgvector's asyncpg codec returns its own Vector type; numpy wants the array.
    to_numpy = getattr(value, "to_numpy", None)
    return to_numpy() if callable(to_numpy) else value


_LINKED = text(
    "SELECT a.id AS a, b.id AS b, 1 - (a.embedding <=> b.embedding) AS similarity"
    " FROM facts a JOIN facts b ON b.agent_id = a.agent_id AND b.id = ANY(a.contradicts)"
    " WHERE a.agent_id = :agent AND b.agent_id = :agent"
    " AND a.status = 'active' AND b.status = 'active'"
    " AND a.embedding IS NOT NULL AND b.embedding IS NOT NULL"
    " AND cardinality(a.contradicts) > 0"
)


async def linked_pairs(conn: AsyncConnection, agent_id: str) -> list[Pair]:
    """Pairs ``learn`` flagged as contradicting, both still active (maybe not neighbours)."""
    rows = await conn.execute(_LINKED, {"agent": agent_id})
    return [Pair(r.a, r.b, float(r.similarity)) for r in rows]


async def penalised_pairs(
    conn: AsyncConnection, agent_id: str
) -> frozenset[tuple[uuid.UUID, uuid.UUID]]:
    """Pairs whose contradiction already halved their confidences (audit trail)."""
    stmt = select(memory_events.c.memory_id, memory_events.c.related_id).where(
        memory_events.c.agent_id == agent_id,
        memory_events.c.event == EventKind.CONTRADICTION.value,
        memory_events.c.details["action"].astext == "halved",
    )
    found = set()
    for row in await conn.execute(stmt):
        if row.related_id is not None:
            found.add(Pair(row.memory_id, row.related_id, 0.0).key)
    return frozenset(found)


_VIEW_COLUMNS = [
    facts.c.id, facts.c.content, facts.c.category, facts.c.subject_key, facts.c.confidence,
    facts.c.evidence_count, facts.c.valid_from, facts.c.contradicts,
]  # fmt: skip


def _view(row: Any) -> FactView:
    return FactView(
        id=row.id, content=row.content, category=row.category, subject_key=row.subject_key,
        confidence=row.confidence, evidence_count=row.evidence_count, valid_from=row.valid_from,
        contradicts=frozenset(row.contradicts or ()),
    )  # fmt: skip


async def fact_views(
    conn: AsyncConnection, agent_id: str, ids: Sequence[uuid.UUID], *, active_only: bool = True
) -> dict[uuid.UUID, FactView]:
    """The views of ``ids`` (active ones only, by default), in chunks of bounded size."""
    found: dict[uuid.UUID, FactView] = {}
    for start in range(0, len(ids), 5000):
        chunk = list(ids[start : start + 5000])
        stmt = select(*_VIEW_COLUMNS).where(facts.c.agent_id == agent_id, facts.c.id.in_(chunk))
        if active_only:
            stmt = stmt.where(facts.c.status == _ACTIVE)
        found.update({r.id: _view(r) for r in await conn.execute(stmt)})
    return found
