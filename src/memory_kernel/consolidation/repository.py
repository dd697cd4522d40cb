"""SQL of consolidation. Functions take the caller's connection and never commit; every
query names one agent (partition pruning, invariant 1)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import any_, bindparam, func, select, text, union, update
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, UUID
from sqlalchemy.ext.asyncio import AsyncConnection

from memory_kernel.brain.store import agents_to_review
from memory_kernel.consolidation.plans import FactView, Pair
from memory_kernel.consolidation.policy import ConfidenceChange, ConfidenceState
from memory_kernel.models.enums import EpisodeStatus, EventKind, FactStatus
from memory_kernel.storage import locks
from memory_kernel.storage.search import SEARCHABLE, knn_sql
from memory_kernel.storage.tables import (
    EMBEDDED_TEXT,
    decisions,
    episodes,
    extraction_queue,
    facts,
    memory_events,
    turns,
)

__all__ = [
    "VECTORED",
    "active_agents",
    "below_confidence",
    "deprecate",
    "evidence_pairs",
    "fact_views",
    "fill_vector",
    "linked_pairs",
    "penalised_pairs",
    "searchable_count",
    "stream_confidence",
    "stream_vectors",
    "try_lock",
    "unlock",
    "vectorless",
    "vectorless_count",
    "write_confidence",
]

_ACTIVE = FactStatus.ACTIVE.value


async def try_lock(conn: AsyncConnection, agent_id: str) -> bool:
    """Session-level try-lock of an agent's consolidation (held until :func:`unlock` or the
    session ends, so a crashed worker never keeps an agent locked)."""
    got = await locks.try_lock(conn, "mk-consolidate", agent_id)
    await conn.commit()
    return got


async def unlock(conn: AsyncConnection, agent_id: str) -> None:
    await locks.unlock(conn, "mk-consolidate", agent_id)
    await conn.commit()


async def active_agents(
    conn: AsyncConnection, review_band: tuple[float, float] | None = None
) -> list[str]:
    """Agents with current facts, ongoing episodes (which may be idle and need ending),
    turns queued for extraction, or memories an embedder outage left without a vector, and
    with ``review_band`` (a judge reads it) deliberations in it no judge has read: a
    maintenance listing, ids only, nothing of their content."""
    with_facts = select(facts.c.agent_id).where(
        facts.c.status.in_([_ACTIVE, FactStatus.PENDING_EMBED.value])
    )
    with_episodes = select(episodes.c.agent_id).where(
        episodes.c.status == EpisodeStatus.ONGOING.value
    )
    with_queue = select(extraction_queue.c.agent_id).where(extraction_queue.c.parked_at.is_(None))
    without_vector = [
        select(t.c.agent_id).where(_without_vector(name)) for name, (t, _) in VECTORED.items()
    ]
    to_review = [] if review_band is None else [agents_to_review(*review_band)]
    both = union(with_facts, with_episodes, with_queue, *without_vector, *to_review).subquery()
    stmt = select(both.c.agent_id).order_by(both.c.agent_id)
    return [str(a) for a in (await conn.scalars(stmt)).all()]


async def set_ef_search(conn: AsyncConnection, ef: int) -> None:
    """Shorter HNSW candidate list for this transaction (near-duplicates are easy to find)."""
    await conn.execute(text("SELECT set_config('hnsw.ef_search', :ef, true)"), {"ef": str(ef)})


# -- evidence ---------------------------------------------------------------------------

_EPISODES_PAGE = text(
    "SELECT id, ended_at FROM episodes"
    " WHERE agent_id = :agent AND status = 'completed' AND embedding IS NOT NULL"
    " AND ended_at > :since AND id > :after ORDER BY id LIMIT :limit"
)

# The facts nearest each episode, over both search tiers (storage.search.knn_sql).
_NEAREST_FACTS = knn_sql(
    "facts", select="id, last_evidence_at, derived_from", vector="e.embedding",
    agent=":agent", k=":k",
)  # fmt: skip
_EVIDENCE_SQL = (
    "SELECT e.id AS episode_id, e.ended_at, n.id AS fact_id"  # noqa: S608 - constants only
    f" FROM episodes e CROSS JOIN LATERAL ({_NEAREST_FACTS}) AS n"
    " WHERE e.agent_id = :agent AND e.id = ANY(:ids)"
    " AND n.distance <= :max_distance AND n.last_evidence_at < e.ended_at"
    " AND NOT (e.id = ANY(n.derived_from))"
)
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
#
# The agent's rows are read in one sequential pass (a server-side cursor, no ORDER BY):
# paging by id visits the heap in random order, one page per row, and once the agent's
# partition outgrows shared_buffers every page is a buffer miss — that made the phases
# superlinear. Writes come later, by id, in small locked batches guarded by what was read.


async def stream_confidence(
    conn: AsyncConnection, agent_id: str, *, chunk: int
) -> AsyncIterator[list[ConfidenceState]]:
    """Every active fact's confidence state, ``chunk`` rows at a time, in heap order."""
    stmt = select(
        facts.c.id, facts.c.confidence, facts.c.last_evidence_at, facts.c.updated_at,
        facts.c.category,
    ).where(facts.c.agent_id == agent_id, facts.c.status == _ACTIVE)  # fmt: skip
    result = await conn.stream(stmt.execution_options(yield_per=chunk))
    async for rows in result.partitions(chunk):
        yield [
            ConfidenceState(r.id, r.confidence, r.last_evidence_at, r.updated_at, r.category)
            for r in rows
        ]


# One statement per batch. Guarded: a fact a concurrent ``learn`` changed since it was
# read (other confidence or updated_at) is left for the next run; RETURNING says which
# rows were written, so events are written for exactly those.
_SET_CONFIDENCE = text(
    "UPDATE facts SET confidence = v.after, last_evidence_at = v.last_evidence_at,"
    " evidence_count = facts.evidence_count + v.n,"
    " derived_from = facts.derived_from || v.derived, updated_at = :now"
    " FROM jsonb_to_recordset(:rows) AS v(id uuid, before float8, after float8,"
    "  last_evidence_at timestamptz, n int, derived uuid[], seen timestamptz)"
    " WHERE facts.agent_id = :agent AND facts.id = v.id AND facts.status = 'active'"
    " AND facts.confidence = v.before AND facts.updated_at = v.seen"
    " RETURNING facts.id"
).bindparams(bindparam("rows", type_=JSONB))


async def write_confidence(
    conn: AsyncConnection,
    agent_id: str,
    changes: Sequence[tuple[ConfidenceChange, datetime]],
    now: datetime,
) -> set[uuid.UUID]:
    """Write ``(change, updated_at as read)`` pairs; returns the ids actually written."""
    if not changes:
        return set()
    rows = [
        {"id": str(c.id), "before": c.before, "after": c.after,
         "last_evidence_at": c.last_evidence_at.isoformat(), "n": len(c.evidence),
         "derived": [str(e) for e in c.evidence], "seen": seen.isoformat()}
        for c, seen in changes
    ]  # fmt: skip
    result = await conn.execute(_SET_CONFIDENCE, {"rows": rows, "agent": agent_id, "now": now})
    return {r.id for r in result}


# -- deprecation --------------------------------------------------------------------------


async def below_confidence(conn: AsyncConnection, agent_id: str, below: float) -> list[uuid.UUID]:
    """Active facts under ``below`` (one scan; the ids only)."""
    stmt = select(facts.c.id).where(
        facts.c.agent_id == agent_id, facts.c.status == _ACTIVE, facts.c.confidence < below
    )
    return sorted((await conn.scalars(stmt)).all(), key=lambda i: i.bytes)


async def deprecate(
    conn: AsyncConnection, agent_id: str, ids: Sequence[uuid.UUID], below: float, now: datetime
) -> list[tuple[uuid.UUID, float]]:
    """Deprecate those of ``ids`` still active and under ``below``: (id, confidence)."""
    stmt = (
        update(facts)
        .where(
            facts.c.agent_id == agent_id,
            facts.c.id == any_(bindparam("ids", type_=ARRAY(UUID(as_uuid=True)))),
            facts.c.status == _ACTIVE,
            facts.c.confidence < below,
        )
        .values(status=FactStatus.DEPRECATED.value, valid_to=now, updated_at=now)
        .returning(facts.c.id, facts.c.confidence)
    )
    return [(r.id, r.confidence) for r in await conn.execute(stmt, {"ids": list(ids)})]


# -- candidates ---------------------------------------------------------------------------


async def searchable_count(conn: AsyncConnection, agent_id: str) -> int:
    stmt = select(func.count()).where(facts.c.agent_id == agent_id, text(SEARCHABLE["facts"]))
    return int(await conn.scalar(stmt) or 0)


async def stream_vectors(
    conn: AsyncConnection, agent_id: str, *, chunk: int
) -> AsyncIterator[tuple[list[uuid.UUID], list[Any]]]:
    """The searchable facts' ids and vectors (numpy arrays), ``chunk`` rows at a time, in
    heap order (one sequential pass; see the confidence section)."""
    stmt = select(facts.c.id, facts.c.embedding).where(
        facts.c.agent_id == agent_id, text(SEARCHABLE["facts"])
    )
    result = await conn.stream(stmt.execution_options(yield_per=chunk))
    async for rows in result.partitions(chunk):
        yield [r.id for r in rows], [_array(r.embedding) for r in rows]


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


async def judged_apart(conn: AsyncConnection, agent_id: str) -> frozenset[frozenset[uuid.UUID]]:
    """The facts of each ambiguous case a judge kept apart (``judged_apart`` events): not
    asked about again."""
    stmt = select(memory_events.c.details).where(
        memory_events.c.agent_id == agent_id,
        memory_events.c.event == EventKind.JUDGED_APART.value,
    )
    return frozenset(
        frozenset(uuid.UUID(i) for i in details["members"]) for details in await conn.scalars(stmt)
    )


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


# -- vectors an outage left out --------------------------------------------------------------

#: The memories besides facts (they have their queue) stored with a vector, and the column
#: it is made of.
VECTORED = {t.name: (t, EMBEDDED_TEXT[t.name]) for t in (episodes, turns, decisions)}


def _without_vector(table: str) -> Any:
    # A text without a letter or a digit never gets a vector: it is not asked for again. As
    # literal SQL, the predicate of the partial indexes of migration 0013, which serve it.
    column = VECTORED[table][1]
    return text(f"{table}.embedding IS NULL AND {table}.{column} ~ '[[:alnum:]]'")


def _vectorless(table: str, agent_id: str) -> Any:
    t, _ = VECTORED[table]
    return (t.c.agent_id == agent_id) & _without_vector(table)


async def vectorless(
    conn: AsyncConnection, table: str, agent_id: str, *, limit: int
) -> list[tuple[uuid.UUID, str]]:
    """Up to ``limit`` rows of ``table`` stored without a vector, oldest first: (id, text)."""
    t, column = VECTORED[table]
    stmt = (
        select(t.c.id, t.c[column])
        .where(_vectorless(table, agent_id))
        .order_by(t.c.created_at, t.c.id)
        .limit(limit)
    )
    return [(r[0], r[1]) for r in await conn.execute(stmt)]


async def vectorless_count(conn: AsyncConnection, table: str, agent_id: str) -> int:
    """How many rows of ``table`` :func:`vectorless` would give, all of them."""
    return int(await conn.scalar(select(func.count()).where(_vectorless(table, agent_id))) or 0)


async def fill_vector(
    conn: AsyncConnection, table: str, agent_id: str, row_id: uuid.UUID, text_: str, vector: Any
) -> bool:
    """Give the row its vector, unless it got one or its text changed meanwhile (here and
    after an erasure made an episode's summary again)."""
    t, column = VECTORED[table]
    done = await conn.execute(
        update(t)
        .where(
            t.c.agent_id == agent_id, t.c.id == row_id, t.c.embedding.is_(None),
            t.c[column] == text_,
        )
        .values(embedding=vector)
    )  # fmt: skip
    return bool(done.rowcount)
