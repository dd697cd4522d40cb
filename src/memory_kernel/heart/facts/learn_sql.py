"""The two statements of the learn path: one read of every candidate, one write of the plan.

``learn`` used to cost a statement per concern (subject candidates, nearest facts, retire,
insert, link, reinforce, events), each a round trip plus its own planning. Here the reads of
a batch are one statement per chunk of it (the nearest facts of every vector through a
lateral kNN, the current facts with the text key of every fact without a vector, and the
current facts of the chunk's subjects) and the writes of one agent are one statement of
data-modifying CTEs. Values always travel as bound arrays; the SQL text is
assembled only from the constant fragments below, and each shape is built once and cached.

Two rules a single write statement must respect:
- A row may be updated only once per statement, so every change to a stored fact (retired,
  linked as a contradiction, reinforced, or — a pending one — given its vector or merged)
  is merged into one row of the update set first.
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

import numpy as np
import numpy.typing as npt
from pgvector import Vector as PgVector
from sqlalchemy import TextClause, text
from sqlalchemy.ext.asyncio import AsyncConnection

from memory_kernel.heart.facts.repository import to_fact
from memory_kernel.models.facts import Fact
from memory_kernel.storage import driver
from memory_kernel.storage.events import Event
from memory_kernel.storage.search import AnyRow, knn_sql

__all__ = ["Candidates", "RowChange", "read_candidates", "write_agent"]

Vector = npt.NDArray[np.float32]

# -- the read -----------------------------------------------------------------------------

# The vectors travel in pgvector's binary form (a ``vector[]``: no text to print and parse)
# and are unpacked once, in a materialised CTE. Each vector's kNN covers both search tiers
# (HNSW-indexed and staged facts, storage.search.knn_sql).
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
# tokens keep every word character) have the same key, and the caller compares the words of
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
def _read_statement(knn: bool, subject: bool, same_text: bool) -> TextClause:
    parts = [
        p for p, wanted in ((_KNN, knn), (_SUBJECT, subject), (_SAME_TEXT, same_text)) if wanted
    ]
    return text(" UNION ALL ".join(parts))


@dataclass(slots=True)
class Candidates:
    """What one read found: the nearest facts per vector and the facts with the text key of
    each text (both in input order), and the current facts of the subjects asked for."""

    nearest: list[list[AnyRow]] = field(default_factory=list)
    same_text: list[list[AnyRow]] = field(default_factory=list)
    by_subject: list[AnyRow] = field(default_factory=list)


async def read_candidates(
    conn: AsyncConnection,
    agent_id: str,
    *,
    vectors: Sequence[Vector],
    keys: Sequence[str],
    k: int,
    texts: Sequence[str] = (),
) -> Candidates:
    """The ``k`` nearest searchable facts of each vector, the current facts with the text
    key of each of ``texts`` (for facts without a vector) and the current facts of
    ``keys``, in one round trip."""
    found = Candidates(nearest=[[] for _ in vectors], same_text=[[] for _ in texts])
    if not vectors and not keys and not texts:
        return found
    params: dict[str, Any] = {"agent_id": agent_id}
    if vectors:
        params |= {"vectors": [PgVector(v) for v in vectors], "k": k}
    if keys:
        params["keys"] = list(keys)
    if texts:
        params["texts"] = list(texts)
    statement = _read_statement(bool(vectors), bool(keys), bool(texts))
    # ``ord`` tells the parts apart: n > 0 the n-th vector, 0 a subject, -n the n-th text.
    for row in await driver.fetch(conn, statement, params):
        if row.ord == 0:
            found.by_subject.append(row)
        elif row.ord > 0:
            found.nearest[int(row.ord) - 1].append(row)
        else:
            found.same_text[-int(row.ord) - 1].append(row)
    return found


# -- the write ----------------------------------------------------------------------------


@dataclass(slots=True)
class RowChange:
    """Everything a batch does to one stored fact, merged (a row is updated once)."""

    superseded_by: uuid.UUID | None = None
    contradicts: list[uuid.UUID] = field(default_factory=list)
    reinforced: int = 0
    derived_from: list[uuid.UUID] = field(default_factory=list)
    # A pending fact's vector: it becomes active (or stays merged/superseded with it).
    embedding: Vector | None = None
    merged_into: uuid.UUID | None = None


_UPDATE = (
    "upd AS ("
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
    " RETURNING f.agent_id, f.id, f.subject, f.subject_key, f.content, f.category,"
    " f.confidence, f.status, f.explicit, f.superseded_by, f.merged_into, f.contradicts,"
    " f.derived_from, f.evidence_count, f.last_evidence_at, f.valid_from, f.valid_to,"
    " f.metadata, f.created_at, f.updated_at, u.times AS times)"
)
_INSERT = (
    "ins AS ("
    " INSERT INTO facts (agent_id, id, subject, subject_key, content, category, confidence,"
    " status, explicit, embedding, superseded_by, contradicts, derived_from, evidence_count,"
    " last_evidence_at, valid_from, valid_to, metadata, created_at, updated_at)"
    " SELECT :agent_id, r.id, r.subject, r.subject_key, r.content, r.category, r.confidence,"
    " r.status, r.explicit, r.embedding, r.superseded_by,"
    " CAST(r.contradicts AS uuid[]), CAST(r.derived_from AS uuid[]), r.evidence_count,"
    " r.last_evidence_at, r.valid_from, r.valid_to, CAST(r.metadata AS jsonb), r.created_at,"
    " r.updated_at"
    " FROM unnest(CAST(:i_id AS uuid[]), CAST(:i_subject AS text[]),"
    " CAST(:i_subject_key AS text[]), CAST(:i_content AS text[]), CAST(:i_category AS text[]),"
    " CAST(:i_confidence AS float8[]), CAST(:i_status AS text[]), CAST(:i_explicit AS bool[]),"
    " CAST(:i_embedding AS vector[]), CAST(:i_superseded_by AS uuid[]),"
    " CAST(:i_contradicts AS text[]), CAST(:i_derived_from AS text[]),"
    " CAST(:i_evidence_count AS int[]), CAST(:i_last_evidence_at AS timestamptz[]),"
    " CAST(:i_valid_from AS timestamptz[]), CAST(:i_valid_to AS timestamptz[]),"
    " CAST(:i_metadata AS text[]), CAST(:i_created_at AS timestamptz[]),"
    " CAST(:i_updated_at AS timestamptz[]))"
    " AS r(id, subject, subject_key, content, category, confidence, status, explicit,"
    " embedding, superseded_by, contradicts, derived_from, evidence_count, last_evidence_at,"
    " valid_from, valid_to, metadata, created_at, updated_at)"
)
_AFTER_UPDATE = " WHERE (SELECT count(*) FROM upd) >= 0"
_EVENTS = (
    "ev AS ("
    " INSERT INTO memory_events (agent_id, id, memory_kind, memory_id, event, reason, score,"
    " decided_by, related_id, details, created_at)"
    " SELECT :agent_id, e.id, e.kind, e.memory_id, e.event, e.reason, e.score, e.decided_by,"
    " e.related_id, CAST(e.details AS jsonb), e.created_at"
    " FROM unnest(CAST(:e_id AS uuid[]), CAST(:e_kind AS text[]), CAST(:e_memory_id AS uuid[]),"
    " CAST(:e_event AS text[]), CAST(:e_reason AS text[]), CAST(:e_score AS float8[]),"
    " CAST(:e_decided_by AS text[]), CAST(:e_related_id AS uuid[]),"
    " CAST(:e_details AS text[]), CAST(:e_created_at AS timestamptz[]))"
    " AS e(id, kind, memory_id, event, reason, score, decided_by, related_id, details,"
    " created_at))"
)
# Hands the caller's transaction its planner settings back (see repository.lock_agents).
_RESTORE = (
    "rs AS (SELECT set_config('enable_seqscan', :s_seqscan, true) AS a,"
    " set_config('hnsw.ef_search', :s_ef, true) AS b)"
)
_REFRESHED = (
    "agent_id, id, subject, subject_key, content, category, confidence, status, explicit,"
    " superseded_by, merged_into, contradicts, derived_from, evidence_count, last_evidence_at,"
    " valid_from, valid_to, metadata, created_at, updated_at"
)


@cache
def _write_statement(update: bool, insert: bool, events: bool, restore: bool) -> TextClause:
    ctes = [_UPDATE] if update else []
    if insert:
        ctes.append("".join([_INSERT, _AFTER_UPDATE if update else "", ")"]))
    if events:
        ctes.append(_EVENTS)
    if restore:
        ctes.append(_RESTORE)
    # Data-modifying CTEs always run; the main query returns the reinforced facts as they
    # are now, and reads ``rs`` so that the restore (a plain SELECT) runs too.
    if update and restore:
        main = ["SELECT", _REFRESHED, "FROM rs LEFT JOIN upd ON upd.times > 0"]
    elif update:
        main = ["SELECT", _REFRESHED, "FROM upd WHERE upd.times > 0"]
    elif restore:
        main = ["SELECT NULL AS id FROM rs"]
    else:
        main = ["SELECT NULL AS id"]
    head = ["WITH", ", ".join(ctes)] if ctes else []
    return text(" ".join([*head, *main]))


def _uuids(values: Sequence[uuid.UUID]) -> str:
    """A ``uuid[]`` in Postgres's array text form: lists of different lengths cannot travel
    as one two-dimensional array, so each list is one text element cast on the server."""
    return "{" + ",".join(str(v) for v in values) + "}"


def _update_params(changes: dict[uuid.UUID, RowChange]) -> dict[str, Any]:
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


def _vector(vector: Vector | None) -> PgVector | None:
    return None if vector is None else PgVector(vector)


_PLAIN = (
    "id", "subject", "subject_key", "content", "category", "confidence", "status", "explicit",
    "superseded_by", "evidence_count", "last_evidence_at", "valid_from", "valid_to",
    "created_at", "updated_at",
)  # fmt: skip


def _insert_params(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    params: dict[str, Any] = {f"i_{name}": [r[name] for r in rows] for name in _PLAIN}
    params["i_embedding"] = [_vector(r["embedding"]) for r in rows]
    params["i_contradicts"] = [_uuids(r["contradicts"]) for r in rows]
    params["i_derived_from"] = [_uuids(r["derived_from"]) for r in rows]
    params["i_metadata"] = [json.dumps(r["metadata"]) for r in rows]
    return params


def _event_params(events: Sequence[Event]) -> dict[str, Any]:
    return {
        "e_id": [uuid.uuid4() for _ in events],
        "e_kind": [e.kind.value for e in events],
        "e_memory_id": [e.memory_id for e in events],
        "e_event": [e.event.value for e in events],
        "e_reason": [e.reason for e in events],
        "e_score": [e.score for e in events],
        "e_decided_by": [e.decided_by.value for e in events],
        "e_related_id": [e.related_id for e in events],
        "e_details": [json.dumps(dict(e.details)) for e in events],
        "e_created_at": [e.at for e in events],
    }


async def write_agent(
    conn: AsyncConnection,
    agent_id: str,
    *,
    changes: dict[uuid.UUID, RowChange],
    rows: Sequence[dict[str, Any]],
    events: Sequence[Event],
    now: datetime,
    restore: dict[str, str] | None = None,
) -> dict[uuid.UUID, Fact]:
    """Apply one agent's decided writes in one statement; returns the reinforced stored
    facts as they are after it. ``restore`` gives back the planner settings saved by
    ``lock_agents`` (pass ``None`` when the transaction ends right after anyway)."""
    if not (changes or rows or events or restore):
        return {}
    params: dict[str, Any] = {"agent_id": agent_id}
    if changes:
        params |= _update_params(changes) | {"now": now}
    if rows:
        params |= _insert_params(rows)
    if events:
        params |= _event_params(events)
    if restore:
        params |= {"s_seqscan": restore["enable_seqscan"], "s_ef": restore["hnsw.ef_search"]}
    statement = _write_statement(bool(changes), bool(rows), bool(events), bool(restore))
    found = await driver.fetch(conn, statement, params)
    return {row.id: to_fact(row) for row in found if row.id is not None}
