"""SQL for facts. Functions take the caller's connection and never commit; every query is
scoped by ``agent_id`` (invariant 1, and what lets Postgres prune to one partition)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt
from sqlalchemy import (
    ColumnElement,
    Text,
    bindparam,
    cast,
    func,
    literal_column,
    select,
    text,
)
from sqlalchemy.dialects.postgresql import TSQUERY
from sqlalchemy.ext.asyncio import AsyncConnection

from memory_kernel.models.enums import FactStatus
from memory_kernel.models.facts import Fact
from memory_kernel.storage import driver, locks
from memory_kernel.storage.search import AnyRow
from memory_kernel.storage.tables import facts

__all__ = [
    "CURRENT",
    "FACT_COLUMNS",
    "as_of",
    "by_ids",
    "chain_step",
    "insert_facts",
    "lock_agents",
    "pending",
    "restore_settings",
    "text_search",
    "to_fact",
    "vector_literal",
]

Vector = npt.NDArray[np.float32]
CURRENT = (FactStatus.ACTIVE.value, FactStatus.PENDING_EMBED.value)
FACT_COLUMNS = [c for c in facts.c if c.name not in ("embedding", "search_tsv")]
# The text-search configuration of the generated ``search_tsv`` column (a constant).
_ENGLISH: ColumnElement[Any] = literal_column("'english'::regconfig")


def to_fact(row: AnyRow) -> Fact:
    m = row._mapping
    return Fact(
        id=m["id"],
        agent_id=m["agent_id"],
        subject=m["subject"],
        subject_key=m["subject_key"],
        content=m["content"],
        category=m["category"],
        confidence=m["confidence"],
        status=FactStatus(m["status"]),
        explicit=m["explicit"],
        superseded_by=m["superseded_by"],
        merged_into=m["merged_into"],
        contradicts=tuple(m["contradicts"] or ()),
        derived_from=tuple(m["derived_from"] or ()),
        evidence_count=m["evidence_count"],
        last_evidence_at=m["last_evidence_at"],
        valid_from=m["valid_from"],
        valid_to=m["valid_to"],
        metadata=dict(m["metadata"] or {}),
        created_at=m["created_at"],
        updated_at=m["updated_at"],
    )


async def lock_agents(conn: AsyncConnection, agent_ids: Iterable[str]) -> dict[str, str]:
    """Serialise fact writes per agent until the transaction ends, and tune the planner for
    the learn path; returns the settings to give back with :func:`restore_settings`.

    Dedup, value-change and subject supersession read-then-write; without the lock two
    concurrent learns could both miss each other. Sorted, so two batches never deadlock.
    The learn path needs only a few nearest facts: a short HNSW candidate list is plenty,
    and the planner must not trade the HNSW scan inside the batched lateral kNN for a
    sequential scan (its cost model does at a few thousand rows, ~40x slower measured).
    """
    saved: dict[str, str] = {}
    for n, agent_id in enumerate(sorted(set(agent_ids))):
        if n > 0:
            await driver.fetch(conn, _LOCK, {"key": lock_number(agent_id)})
            continue
        (row,) = await driver.fetch(conn, _LOCK_AND_TUNE, {"key": lock_number(agent_id)})
        saved = {"enable_seqscan": row.seqscan, "hnsw.ef_search": row.ef}
    return saved


def lock_number(agent_id: str) -> int:
    """The advisory lock every writer of an agent's facts takes (learn, pending embeds,
    consolidation)."""
    return locks.lock_number("mk-facts", agent_id)


def opening(agent_ids: Iterable[str]) -> list[str]:
    """:func:`lock_agents` as constant statements for ``Database.lean_transaction`` (sent with
    ``BEGIN`` in one round trip), for a transaction the learn path owns: nothing to restore."""
    taken = [locks.lock_statement("mk-facts", a) for a in sorted(set(agent_ids))]
    return [
        *taken,
        "SET LOCAL enable_seqscan = off",
        "SET LOCAL hnsw.ef_search = 40",
        # Read and write planned once per connection, not per learn (see
        # episodes.admission_sql.admission_opening): learn p50 7.3-7.6 -> 5.7 ms at 10k
        # facts, same run.
        "SET LOCAL plan_cache_mode = force_generic_plan",
    ]


_LOCK = text("SELECT pg_advisory_xact_lock(CAST(:key AS bigint))")
_LOCK_AND_TUNE = text(
    "SELECT pg_advisory_xact_lock(CAST(:key AS bigint)),"
    " current_setting('enable_seqscan') AS seqscan, current_setting('hnsw.ef_search') AS ef,"
    " set_config('enable_seqscan', 'off', true), set_config('hnsw.ef_search', '40', true)"
)


async def restore_settings(conn: AsyncConnection, saved: dict[str, str]) -> None:
    """Give the caller's transaction its planner settings back (``learn_in`` composes)."""
    if saved:
        await conn.execute(
            text(
                "SELECT set_config('enable_seqscan', :s, true),"
                " set_config('hnsw.ef_search', :e, true)"
            ),
            {"s": saved["enable_seqscan"], "e": saved["hnsw.ef_search"]},
        )


def vector_literal(vector: Vector) -> str:
    """pgvector's text form, built with one C-level format per vector (pgvector's own
    converter formats float by float, which dominated bulk learns)."""
    values = vector.tolist()
    return "[" + (",".join(["%.7g"] * len(values)) % tuple(values)) + "]"


_INSERT = facts.insert().values(
    embedding=cast(bindparam("b_embedding", type_=Text), facts.c.embedding.type)
)


async def insert_facts(conn: AsyncConnection, rows: list[dict[str, Any]]) -> None:
    """Bulk insert; vectors travel as pgvector text made by :func:`vector_literal`."""
    if not rows:
        return
    params = []
    for row in rows:
        data = {k: v for k, v in row.items() if k != "embedding"}
        vector = row["embedding"]
        data["b_embedding"] = None if vector is None else vector_literal(vector)
        params.append(data)
    await conn.execute(_INSERT, params)


async def by_ids(conn: AsyncConnection, agent_id: str, ids: Sequence[uuid.UUID]) -> list[Fact]:
    if not ids:
        return []
    stmt = select(*FACT_COLUMNS).where(facts.c.agent_id == agent_id, facts.c.id.in_(list(ids)))
    found = {row.id: to_fact(row) for row in await conn.execute(stmt)}
    return [found[i] for i in ids if i in found]


async def chain_step(
    conn: AsyncConnection, agent_id: str, ids: Sequence[uuid.UUID]
) -> Sequence[AnyRow]:
    """Facts linked to ``ids`` by ``superseded_by`` in either direction (one hop)."""
    older = select(facts.c.superseded_by).where(
        facts.c.agent_id == agent_id, facts.c.id.in_(list(ids))
    )
    stmt = select(*FACT_COLUMNS).where(
        facts.c.agent_id == agent_id,
        (facts.c.superseded_by.in_(list(ids))) | (facts.c.id.in_(older.scalar_subquery())),
    )
    return (await conn.execute(stmt)).all()


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
) -> Sequence[AnyRow]:
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
    return (await conn.execute(stmt)).all()


async def pending(conn: AsyncConnection, agent_id: str, limit: int) -> Sequence[AnyRow]:
    stmt = (
        select(*FACT_COLUMNS)
        .where(facts.c.agent_id == agent_id, facts.c.status == FactStatus.PENDING_EMBED.value)
        .order_by(facts.c.valid_from, facts.c.created_at)
        .limit(limit)
    )
    return (await conn.execute(stmt)).all()
