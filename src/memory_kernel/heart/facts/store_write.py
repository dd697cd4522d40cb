"""The one write of a learn: everything an agent's part of a decided batch writes, as one
statement of data-modifying CTEs (update the stored facts it touched, insert the new rows,
insert the events). Values travel as bound arrays, one per column; the SQL is assembled
from the table's own column list and constant fragments, once per shape.

Two rules a single write statement must respect:
- A row may be updated only once per statement, so every change to a stored fact (retired,
  linked as a contradiction, reinforced, or — a pending one — given its vector or merged)
  is merged into one row of the update set first (:func:`_changes`).
- Retiring must happen before inserting: a new fact may take over the subject of the one it
  supersedes (one current fact per subject, a unique index checked at insert). The insert
  reads ``(SELECT count(*) FROM upd)``, which runs the update to completion first.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from typing import Any

from pgvector import Vector as PgVector
from sqlalchemy import ARRAY, TextClause, text
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.ext.asyncio import AsyncConnection

from memory_kernel.heart.facts.policy import FactEvent, Writes
from memory_kernel.heart.facts.store import FACT_COLUMNS, to_fact
from memory_kernel.models.enums import DecidedBy, MemoryKind
from memory_kernel.models.facts import Fact
from memory_kernel.runtime import Vector
from memory_kernel.storage.tables import facts

__all__ = ["write"]

_DIALECT = postgresql.dialect()  # type: ignore[no-untyped-call]
# The columns of a new row, from the table: all but the agent (one per statement), the
# staging flag (its default: a new row waits, staged, for the index worker) and the
# generated tsvector. Arrays and JSON cannot nest in an array: they travel as text.
_NEW = [c for c in facts.c if c.name not in ("agent_id", "indexed", "search_tsv")]
_AS_TEXT = {c.name for c in _NEW if isinstance(c.type, ARRAY | JSONB)}


def _sql_type(name: str) -> str:
    return str(facts.c[name].type.compile(dialect=_DIALECT))


# The fragments of the insert, each built from the table's columns (names and types only).
_NEW_NAMES = ", ".join(c.name for c in _NEW)
_NEW_VALUES = ", ".join(
    f"CAST(r.{c.name} AS {_sql_type(c.name)})" if c.name in _AS_TEXT else f"r.{c.name}"
    for c in _NEW
)
_NEW_ARRAYS = ", ".join(
    f"CAST(:i_{c.name} AS {'TEXT' if c.name in _AS_TEXT else _sql_type(c.name)}[])" for c in _NEW
)
_INSERT = (
    f"ins AS (INSERT INTO facts (agent_id, {_NEW_NAMES})"  # noqa: S608 - the table's names
    f" SELECT :agent_id, {_NEW_VALUES} FROM unnest({_NEW_ARRAYS}) AS r({_NEW_NAMES})"
)
_AFTER_UPDATE = " WHERE (SELECT count(*) FROM upd) >= 0"
_FACT_NAMES = ", ".join(c.name for c in FACT_COLUMNS)
_RETURNED = ", ".join(f"f.{c.name}" for c in FACT_COLUMNS)
_UPDATE = (
    "upd AS ("  # noqa: S608 - the table's own column names
    " UPDATE facts AS f SET"
    " status = CASE WHEN u.sup IS NOT NULL THEN 'superseded'"
    " WHEN u.merged IS NOT NULL THEN 'merged'"
    " WHEN u.vec IS NOT NULL AND f.status = 'pending_embed' THEN 'active' ELSE f.status END,"
    " superseded_by = COALESCE(u.sup, f.superseded_by),"
    " merged_into = COALESCE(u.merged, f.merged_into),"
    " embedding = COALESCE(u.vec, f.embedding),"
    " valid_to = CASE WHEN u.sup IS NULL AND u.merged IS NULL THEN f.valid_to"
    " ELSE CAST(:now AS timestamptz) END,"
    " contradicts = f.contradicts || CAST(u.links AS uuid[]),"
    " derived_from = f.derived_from || CAST(u.derived AS uuid[]),"
    " evidence_count = f.evidence_count + u.times,"
    # c <- 1 - (1 - c) * 0.95^times: c += 0.05 (1 - c) once per piece of evidence.
    " confidence = CASE WHEN u.times = 0 THEN f.confidence"
    " ELSE 1.0 - (1.0 - f.confidence) * power(0.95, u.times) END,"
    " last_evidence_at = CASE WHEN u.times = 0 THEN f.last_evidence_at"
    " ELSE CAST(:now AS timestamptz) END,"
    " updated_at = CAST(:now AS timestamptz),"
    # The new row version is staged: left indexed, this statement would insert an active
    # fact into the HNSW index itself (storage.indexer).
    " indexed = false"
    " FROM unnest(CAST(:u_id AS uuid[]), CAST(:u_sup AS uuid[]), CAST(:u_links AS text[]),"
    " CAST(:u_times AS int[]), CAST(:u_derived AS text[]), CAST(:u_vec AS vector[]),"
    " CAST(:u_merged AS uuid[])) AS u(id, sup, links, times, derived, vec, merged)"
    " WHERE f.agent_id = :agent_id AND f.id = u.id"
    f" RETURNING {_RETURNED}, u.times AS times)"
)
_EVENTS = (
    "ev AS ("
    " INSERT INTO memory_events (agent_id, id, memory_kind, memory_id, event, reason, score,"
    " decided_by, related_id, details, created_at)"
    " SELECT :agent_id, e.id, CAST(:e_kind AS text), e.memory_id, e.event, e.reason, e.score,"
    " CAST(:e_decided_by AS text), e.related_id, CAST(e.details AS jsonb), e.created_at"
    " FROM unnest(CAST(:e_id AS uuid[]), CAST(:e_memory_id AS uuid[]),"
    " CAST(:e_event AS text[]), CAST(:e_reason AS text[]), CAST(:e_score AS float8[]),"
    " CAST(:e_related_id AS uuid[]), CAST(:e_details AS text[]),"
    " CAST(:e_created_at AS timestamptz[]))"
    " AS e(id, memory_id, event, reason, score, related_id, details, created_at))"
)


@cache
def _statement(update: bool, insert: bool, events: bool) -> TextClause:
    ctes = [_UPDATE] if update else []
    if insert:
        ctes.append("".join([_INSERT, _AFTER_UPDATE if update else "", ")"]))
    if events:
        ctes.append(_EVENTS)
    # Data-modifying CTEs always run; the main query returns the reinforced facts as they
    # are now.
    main = f"SELECT {_FACT_NAMES} FROM upd WHERE upd.times > 0"  # noqa: S608 - constants
    if not update:
        main = "SELECT 1 AS id"
    return text(f"WITH {', '.join(ctes)} {main}")


@dataclass(slots=True)
class _RowChange:
    """Everything a batch does to one stored fact, merged (a row is updated once)."""

    superseded_by: uuid.UUID | None = None
    contradicts: list[uuid.UUID] = field(default_factory=list)
    reinforced: int = 0
    derived_from: list[uuid.UUID] = field(default_factory=list)
    # A pending fact's vector: it becomes active (or stays merged/superseded with it).
    embedding: Vector | None = None
    merged_into: uuid.UUID | None = None


def _changes(writes: Writes) -> dict[uuid.UUID, _RowChange]:
    changes: dict[uuid.UUID, _RowChange] = {}

    def of(fact_id: uuid.UUID) -> _RowChange:
        return changes.setdefault(fact_id, _RowChange())

    for old, new in writes.supersede:
        of(old).superseded_by = new
    for old, new in writes.contradict:
        of(old).contradicts.append(new)
    for fact_id, times in writes.reinforce.items():
        change = of(fact_id)
        change.reinforced += times
        change.derived_from.extend(writes.derived.get(fact_id, ()))
    for fact_id, vector in writes.embed.items():
        of(fact_id).embedding = vector
    for fact_id, target in writes.merge.items():
        of(fact_id).merged_into = target
    return changes


def _uuids(values: Sequence[uuid.UUID]) -> str:
    """A ``uuid[]`` in Postgres's array text form: lists of different lengths cannot travel
    as one two-dimensional array, so each list is one text element cast on the server."""
    return "{" + ",".join(str(v) for v in values) + "}"


def _vector(vector: Vector | None) -> PgVector | None:
    # Wrapped: the driver would take a bare array for a nested array of numbers.
    return None if vector is None else PgVector(vector)


def _update_params(changes: dict[uuid.UUID, _RowChange]) -> dict[str, Any]:
    ids = list(changes)
    return {
        "u_id": ids,
        "u_sup": [changes[i].superseded_by for i in ids],
        "u_links": [_uuids(changes[i].contradicts) for i in ids],
        "u_times": [changes[i].reinforced for i in ids],
        "u_derived": [_uuids(changes[i].derived_from) for i in ids],
        "u_vec": [_vector(changes[i].embedding) for i in ids],
        "u_merged": [changes[i].merged_into for i in ids],
    }


def _encode(name: str, value: Any) -> Any:
    if name == "embedding":
        return _vector(value)
    if name == "metadata":
        return json.dumps(value)
    return _uuids(value) if name in _AS_TEXT else value


def _insert_params(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    return {f"i_{c.name}": [_encode(c.name, r[c.name]) for r in rows] for c in _NEW}


def _event_params(events: Sequence[FactEvent]) -> dict[str, Any]:
    return {
        "e_kind": MemoryKind.FACT.value,
        "e_decided_by": DecidedBy.RULE.value,
        "e_id": [uuid.uuid4() for _ in events],
        "e_memory_id": [e.memory_id for e in events],
        "e_event": [e.event.value for e in events],
        "e_reason": [e.reason for e in events],
        "e_score": [e.score for e in events],
        "e_related_id": [e.related_id for e in events],
        "e_details": [json.dumps(dict(e.details)) for e in events],
        "e_created_at": [e.at for e in events],
    }


async def write(
    conn: AsyncConnection, agent_id: str, writes: Writes, now: datetime
) -> dict[uuid.UUID, Fact]:
    """Apply one agent's decided writes in one statement; returns the reinforced stored
    facts as they are after it."""
    changes = _changes(writes)
    if not (changes or writes.rows or writes.events):
        return {}
    params: dict[str, Any] = {"agent_id": agent_id}
    if changes:
        params |= _update_params(changes) | {"now": now}
    if writes.rows:
        params |= _insert_params(writes.rows)
    if writes.events:
        params |= _event_params(writes.events)
    statement = _statement(bool(changes), bool(writes.rows), bool(writes.events))
    found = await conn.execute(statement, params)
    return {row.id: to_fact(row) for row in found} if changes else {}
