"""The SQL of facts: the agents' lock, the reads of the learn path and of the views. The one
write of a learn is in ``store_write``. Functions take the caller's connection and never
commit; every query is scoped by ``agent_id`` (invariant 1, and what lets Postgres prune to
one partition).

The candidates of a stretch of a batch are one statement per agent: the nearest facts of
every vector through a lateral kNN, the current facts with the text key of every fact
without a vector, and the current facts of the stretch's subjects. Values always travel as
bound arrays; the SQL text is assembled only from the constant fragments below, and each
shape is built once.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from datetime import datetime
from functools import cache
from typing import Any

from pgvector import Vector as PgVector
from sqlalchemy import (
    ColumnElement,
    DateTime,
    Float,
    Row,
    Text,
    TextClause,
    bindparam,
    cast,
    func,
    literal_column,
    select,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, TSQUERY
from sqlalchemy.ext.asyncio import AsyncConnection

from memory_kernel.heart.facts.candidates import Found, Item, Known
from memory_kernel.heart.facts.policy import row_fact
from memory_kernel.models.enums import FactStatus
from memory_kernel.models.facts import Fact
from memory_kernel.storage import locks
from memory_kernel.storage.search import knn_sql, nearest
from memory_kernel.storage.tables import episodes, facts
from memory_kernel.storage.vector import as_array
from memory_kernel.vectors import Vector

__all__ = [
    "CONFIDENT",
    "CURRENT",
    "FACT_COLUMNS",
    "LOCK_SCOPE",
    "SEARCH_COLUMNS",
    "agents_with_pending",
    "as_of",
    "by_ids",
    "chain_step",
    "lock_agents",
    "missing_episodes",
    "pending",
    "read_candidates",
    "read_statement",
    "still_pending",
    "successors",
    "text_search",
    "to_fact",
    "vector_of",
]  # fmt: skip

CURRENT = (FactStatus.ACTIVE.value, FactStatus.PENDING_EMBED.value)
#: Every column of a fact but the vector and the generated tsvector.
FACT_COLUMNS = [c for c in facts.c if c.name not in ("embedding", "search_tsv")]
#: What a search returns of a fact: its columns and its vector (for read-time resolution).
SEARCH_COLUMNS = [*FACT_COLUMNS, facts.c.embedding]
#: The advisory-lock scope of an agent's facts: every writer of them takes it (learn, the
#: embedding queue, consolidation).
LOCK_SCOPE = "mk-facts"
# The text-search configuration of the generated ``search_tsv`` column (a constant).
_ENGLISH: ColumnElement[Any] = literal_column("'english'::regconfig")


def to_fact(row: Row[*tuple[Any, ...]]) -> Fact:
    return row_fact(row._mapping)


def vector_of(row: Row[*tuple[Any, ...]]) -> Vector | None:
    """The vector of a row read with :data:`SEARCH_COLUMNS`."""
    return as_array(row.embedding)


async def lock_agents(conn: AsyncConnection, agent_ids: Iterable[str]) -> None:
    """Serialise the writes of these agents' facts until the transaction ends. Dedup, value
    change and subject supersession read, then write: without the lock two concurrent
    learns could both miss each other."""
    await locks.lock_many(conn, LOCK_SCOPE, agent_ids)


_EPISODES = select(episodes.c.id).where(
    episodes.c.agent_id == bindparam("agent_id"),
    episodes.c.id == func.any(bindparam("ids", type_=ARRAY(episodes.c.id.type))),
)


async def missing_episodes(
    conn: AsyncConnection, agent_id: str, ids: Iterable[uuid.UUID]
) -> list[uuid.UUID]:
    """Those of ``ids`` that are no episode of ``agent_id`` (``derived_from`` must name the
    agent's own episodes). Episodes are never deleted on their own: one found stays."""
    wanted = sorted(set(ids))
    found = set((await conn.scalars(_EPISODES, {"agent_id": agent_id, "ids": wanted})).all())
    return [i for i in wanted if i not in found]


# -- the candidates of a learn -------------------------------------------------------------

# The vectors travel in pgvector's binary form (a ``vector[]``) and are unpacked once, in a
# materialised CTE. Each vector's kNN covers both search tiers (HNSW-indexed and staged
# facts, storage.search.knn_sql).
_NEAREST = knn_sql(
    "facts", select="id, content, subject_key, valid_from", vector="q.v", agent=":agent_id",
    k=":k",
)  # fmt: skip
_KNN = (
    "WITH q AS MATERIALIZED ("  # noqa: S608 - _NEAREST is built from constants only
    " SELECT ord, v FROM unnest(CAST(:vectors AS vector[])) WITH ORDINALITY AS t(v, ord))"
    " SELECT q.ord AS ord, n.id, n.content, n.subject_key, n.valid_from, n.distance,"
    " CAST(NULL AS vector) AS embedding"
    f" FROM q CROSS JOIN LATERAL ({_NEAREST}) AS n"
)
# Same-subject facts come with their vectors: the policy compares them in memory.
_SUBJECT = (
    "SELECT CAST(0 AS bigint) AS ord, f.id, f.content, f.subject_key, f.valid_from,"
    " CAST(NULL AS float8) AS distance, f.embedding"
    " FROM facts f"
    " WHERE f.agent_id = :agent_id AND f.subject_key = ANY(CAST(:keys AS text[]))"
    " AND f.status IN ('active', 'pending_embed')"
)
# Facts without a vector are matched by their words: the current facts with the text's key,
# up to 50 per text. The key (indexed by migration 0007, whose expression this must be) is the
# md5 of the text's word characters, lowercased: texts with the same words (the learn path's
# tokens keep every word character) have the same key, and the policy compares the words of
# what it finds exactly. (A database with the C locale sees no letters outside ASCII: texts
# without any share the empty key, hence the limit.)
_SAME_TEXT = (
    "SELECT -t.ord AS ord, m.id, m.content, m.subject_key, m.valid_from,"
    " CAST(NULL AS float8) AS distance, m.embedding"
    " FROM unnest(CAST(:texts AS text[])) WITH ORDINALITY AS t(body, ord)"
    " CROSS JOIN LATERAL (SELECT f.id, f.content, f.subject_key, f.valid_from, f.embedding"
    " FROM facts f WHERE f.agent_id = :agent_id AND f.status IN ('active', 'pending_embed')"
    " AND CAST(md5(regexp_replace(lower(f.content), '\\W+', '', 'g')) AS uuid)"
    " = CAST(md5(regexp_replace(lower(t.body), '\\W+', '', 'g')) AS uuid) LIMIT 50) AS m"
)


@cache
def read_statement(knn: bool, subject: bool, same_text: bool) -> TextClause:
    """The candidate read with the parts a stretch needs (each shape built once)."""
    parts = [
        p for p, wanted in ((_KNN, knn), (_SUBJECT, subject), (_SAME_TEXT, same_text)) if wanted
    ]
    return text(" UNION ALL ".join(parts))


def _known(row: Row[*tuple[Any, ...]]) -> Known:
    return Known(row.id, row.content, row.subject_key, row.valid_from, as_array(row.embedding))


async def read_candidates(
    conn: AsyncConnection, agent_id: str, items: Sequence[tuple[int, Item]], k: int
) -> Found:
    """The candidates of ``items`` (batch index, item) of one agent, in one round trip: the
    ``k`` nearest searchable facts of each item with a vector, the current facts with the
    text key of each item without one, and the current facts of their subjects."""
    keys = sorted({p.subject_key for _, p in items if p.subject_key})
    with_vector = [(i, p.vector) for i, p in items if p.vector is not None]
    wordy = [(i, p.content) for i, p in items if p.vector is None]
    found = Found()
    if not (keys or with_vector or wordy):
        return found
    params: dict[str, Any] = {"agent_id": agent_id}
    if with_vector:
        params |= {"vectors": [PgVector(v) for _, v in with_vector], "k": k}
    if keys:
        params["keys"] = keys
    if wordy:
        params["texts"] = [body for _, body in wordy]
    statement = read_statement(bool(with_vector), bool(keys), bool(wordy))
    # ``ord`` tells the parts apart: n > 0 the n-th vector, 0 a subject, -n the n-th text.
    for row in await conn.execute(statement, params):
        if row.ord == 0:
            found.by_subject.append(_known(row))
        elif row.ord > 0:
            index = with_vector[int(row.ord) - 1][0]
            found.nearest.setdefault(index, []).append((_known(row), 1.0 - float(row.distance)))
        else:
            found.same_text.setdefault(wordy[-int(row.ord) - 1][0], []).append(_known(row))
    for index, _ in with_vector:  # an item with no neighbour has none, not "not read"
        found.nearest.setdefault(index, [])
    for index, _ in wordy:
        found.same_text.setdefault(index, [])
    return found


# -- the embedding queue --------------------------------------------------------------------


async def agents_with_pending(conn: AsyncConnection, limit: int) -> list[str]:
    """Which agents have facts waiting for a vector (a maintenance listing: no content)."""
    stmt = (
        select(facts.c.agent_id)
        .where(facts.c.status == FactStatus.PENDING_EMBED.value)
        .distinct()
        .limit(limit)
    )
    return [str(a) for a in (await conn.scalars(stmt)).all()]


async def pending(conn: AsyncConnection, agent_id: str, limit: int) -> list[Fact]:
    """The agent's facts waiting for a vector, in the order they were learned."""
    stmt = (
        select(*FACT_COLUMNS)
        .where(facts.c.agent_id == agent_id, facts.c.status == FactStatus.PENDING_EMBED.value)
        .order_by(facts.c.valid_from, facts.c.created_at)
        .limit(limit)
    )
    return [to_fact(row) for row in await conn.execute(stmt)]


async def still_pending(
    conn: AsyncConnection, agent_id: str, ids: Sequence[uuid.UUID]
) -> set[uuid.UUID]:
    """Those of ``ids`` still waiting for a vector."""
    stmt = select(facts.c.id).where(
        facts.c.agent_id == agent_id,
        facts.c.id.in_(list(ids)),
        facts.c.status == FactStatus.PENDING_EMBED.value,
    )
    return set((await conn.scalars(stmt)).all())


# -- the views ------------------------------------------------------------------------------


async def by_ids(conn: AsyncConnection, agent_id: str, ids: Sequence[uuid.UUID]) -> list[Fact]:
    if not ids:
        return []
    stmt = select(*FACT_COLUMNS).where(facts.c.agent_id == agent_id, facts.c.id.in_(list(ids)))
    found = {row.id: to_fact(row) for row in await conn.execute(stmt)}
    return [found[i] for i in ids if i in found]


async def chain_step(conn: AsyncConnection, agent_id: str, ids: Sequence[uuid.UUID]) -> list[Fact]:
    """Facts linked to ``ids`` by ``superseded_by`` in either direction (one hop)."""
    older = select(facts.c.superseded_by).where(
        facts.c.agent_id == agent_id, facts.c.id.in_(list(ids))
    )
    stmt = select(*FACT_COLUMNS).where(
        facts.c.agent_id == agent_id,
        (facts.c.superseded_by.in_(list(ids))) | (facts.c.id.in_(older.scalar_subquery())),
    )
    return [to_fact(row) for row in await conn.execute(stmt)]


async def as_of(conn: AsyncConnection, agent_id: str, when: datetime) -> list[Fact]:
    stmt = (
        select(*FACT_COLUMNS)
        .where(
            facts.c.agent_id == agent_id,
            facts.c.status != FactStatus.REJECTED.value,
            facts.c.valid_from <= when,
            (facts.c.valid_to.is_(None)) | (facts.c.valid_to > when),
        )
        .order_by(facts.c.valid_from, facts.c.created_at, facts.c.id)
    )
    return [to_fact(row) for row in await conn.execute(stmt)]


async def text_search(
    conn: AsyncConnection,
    agent_id: str,
    query: str,
    *,
    statuses: Sequence[str],
    k: int,
    min_confidence: float,
) -> list[Fact]:
    """Full-text matches of any query word (OR), best ``ts_rank`` first."""
    # plainto_tsquery ANDs the words; one matching word should be enough to be found.
    words = cast(func.plainto_tsquery(_ENGLISH, cast(query, Text)), Text)
    tsq = cast(func.replace(words, "&", "|"), TSQUERY)
    rank = func.ts_rank(facts.c.search_tsv, tsq).label("rank")
    where: list[ColumnElement[bool]] = [
        facts.c.agent_id == agent_id,
        facts.c.status.in_(list(statuses)),
        facts.c.confidence >= min_confidence,
        facts.c.search_tsv.bool_op("@@")(tsq),
    ]
    stmt = select(*FACT_COLUMNS, rank).where(*where).order_by(rank.desc()).limit(k)
    return [to_fact(row) for row in await conn.execute(stmt)]


# The filters of a search's kNN, each one object, so each statement is built once
# (``storage.search.knn_statement``): the confident facts, and of those the ones learned after
# a given fact (``successors``).
CONFIDENT = (facts.c.confidence >= bindparam("min_confidence", type_=Float),)
_LEARNED_AFTER = (
    *CONFIDENT,
    facts.c.created_at > bindparam("after", type_=DateTime(timezone=True)),
)


async def successors(
    conn: AsyncConnection, agent_id: str, sources: Sequence[tuple[uuid.UUID, datetime, Vector]],
    *, recalled: set[uuid.UUID], k: int, min_confidence: float,
) -> dict[uuid.UUID, list[tuple[Fact, Vector]]]:  # fmt: skip
    """For each source fact (its id, when it was learned, its vector), those of the ``k``
    current facts learned after it and nearest to it that are not ``recalled`` (nor another
    source's), with their vectors."""
    seen = set(recalled)
    found: dict[uuid.UUID, list[tuple[Fact, Vector]]] = {}
    for source, learned, vector in sources:
        rows = await nearest(
            conn, facts, agent_id=agent_id, vector=vector, k=k, where=_LEARNED_AFTER,
            columns=SEARCH_COLUMNS, params={"min_confidence": min_confidence, "after": learned},
        )  # fmt: skip
        for row in rows:
            if row.id not in seen and (near := vector_of(row)) is not None:
                seen.add(row.id)
                found.setdefault(source, []).append((to_fact(row), near))
    return found
