"""Writing merge, supersede and contradiction decisions, a batch per transaction.

The rows a batch touches are locked (``FOR UPDATE``) and re-read inside the transaction; a
unit whose facts are no longer all active (a concurrent ``learn`` retired one) is skipped
and found again by the next run. Units change an in-memory copy of the rows, and each
touched row is written once, so a fact in two units of a batch ends up right. A unit is
never split across transactions: cancelling a run can stop between units, never inside one.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import any_, bindparam, select, text, update
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, UUID
from sqlalchemy.ext.asyncio import AsyncConnection

from memory_kernel.models.consolidation import ConsolidationAction as Action
from memory_kernel.models.enums import DecidedBy, EventKind, FactStatus, MemoryKind
from memory_kernel.storage.events import Event
from memory_kernel.storage.tables import facts
from memory_kernel.vectors import Vector

__all__ = ["ContradictionUnit", "MergeUnit", "SupersedeUnit", "Unit", "apply_units"]

_ACTIVE = FactStatus.ACTIVE.value


@dataclass(frozen=True, slots=True)
class MergeUnit:
    winner: uuid.UUID
    losers: tuple[uuid.UUID, ...]
    similarity: float
    reason: str
    decided_by: DecidedBy
    new_content: str | None = None  # a judge's combined wording: the winner is re-embedded
    new_vector: Vector | None = None  # None with new_content: the queue embeds it later

    @property
    def ids(self) -> tuple[uuid.UUID, ...]:
        return (self.winner, *self.losers)


@dataclass(frozen=True, slots=True)
class SupersedeUnit:
    winner: uuid.UUID
    losers: tuple[uuid.UUID, ...]
    similarity: float
    reason: str
    decided_by: DecidedBy

    @property
    def ids(self) -> tuple[uuid.UUID, ...]:
        return (self.winner, *self.losers)


@dataclass(frozen=True, slots=True)
class ContradictionUnit:
    """Halve both confidences once and flag the pair as contradicting."""

    a: uuid.UUID
    b: uuid.UUID
    similarity: float
    reason: str
    decided_by: DecidedBy

    @property
    def ids(self) -> tuple[uuid.UUID, ...]:
        return (self.a, self.b)


Unit = MergeUnit | SupersedeUnit | ContradictionUnit


@dataclass(slots=True)
class _Row:
    id: uuid.UUID
    status: str
    confidence: float
    evidence_count: int
    derived_from: list[uuid.UUID]
    last_evidence_at: datetime
    contradicts: list[uuid.UUID]
    merged_into: uuid.UUID | None = None
    superseded_by: uuid.UUID | None = None
    valid_to: datetime | None = None
    content: str | None = None  # set only when a merge rewrote it
    vector: Vector | None = None
    dirty: bool = False


@dataclass(slots=True)
class _Batch:
    agent_id: str
    now: datetime
    rows: dict[uuid.UUID, _Row]
    events: list[Event] = field(default_factory=list)
    counts: Counter[Action] = field(default_factory=Counter)

    def event(self, row: uuid.UUID, kind: EventKind, unit: Unit, **kw: Any) -> None:
        self.events.append(
            Event(agent_id=self.agent_id, kind=MemoryKind.FACT, memory_id=row, event=kind,
                  decided_by=unit.decided_by, at=self.now, reason=unit.reason,
                  score=unit.similarity, **kw)
        )  # fmt: skip


def _merge(batch: _Batch, unit: MergeUnit) -> None:
    winner = batch.rows[unit.winner]
    for loser_id in unit.losers:
        loser = batch.rows[loser_id]
        loser.status, loser.merged_into, loser.valid_to = "merged", winner.id, batch.now
        winner.derived_from += [d for d in loser.derived_from if d not in winner.derived_from]
        winner.evidence_count += loser.evidence_count
        winner.last_evidence_at = max(winner.last_evidence_at, loser.last_evidence_at)
        loser.dirty = True
        batch.event(loser_id, EventKind.MERGED, unit, related_id=winner.id)
    winner.dirty = True
    details: dict[str, Any] = {"merged": [str(i) for i in unit.losers]}
    if unit.new_content is not None:
        winner.content, winner.vector = unit.new_content, unit.new_vector
        details["content_changed"] = True
        batch.counts[Action.REEMBEDDED] += 1
    batch.event(winner.id, EventKind.REINFORCED, unit, details=details)
    batch.counts[Action.MERGED] += len(unit.losers)


def _supersede(batch: _Batch, unit: SupersedeUnit) -> None:
    for loser_id in unit.losers:
        loser = batch.rows[loser_id]
        loser.status, loser.superseded_by, loser.valid_to = "superseded", unit.winner, batch.now
        loser.dirty = True
        batch.event(loser_id, EventKind.SUPERSEDED, unit, related_id=unit.winner)
    batch.counts[Action.SUPERSEDED] += len(unit.losers)


def _contradict(batch: _Batch, unit: ContradictionUnit) -> None:
    for mine, other in ((unit.a, unit.b), (unit.b, unit.a)):
        row = batch.rows[mine]
        before = row.confidence
        row.confidence = before * 0.5
        if other not in row.contradicts:
            row.contradicts.append(other)
        row.dirty = True
        details = {"action": "halved", "before": before, "after": row.confidence}
        batch.event(mine, EventKind.CONTRADICTION, unit, related_id=other, details=details)
    batch.counts[Action.CONTRADICTION] += 1


_LOCK_COLUMNS = [
    facts.c.id, facts.c.status, facts.c.confidence, facts.c.evidence_count,
    facts.c.derived_from, facts.c.last_evidence_at, facts.c.contradicts,
]  # fmt: skip

# Two set-based statements per batch (jsonb_to_recordset: one parameter, ragged uuid
# arrays included). Rows that stay active go first: their update changes no indexed column,
# so it can be HOT (in place, no index insert) when the page has room — and a cluster's
# members often share a page. A retired row's new version changes ``status`` (indexed) and
# is never HOT; written first, it would take the page's free space and push the winner's
# update off the page, which re-inserts the winner into the HNSW index (dearer still once
# the index outgrows shared_buffers: the superlinear part of this phase).
_WRITE_ACTIVE = text(
    "UPDATE facts SET confidence = v.confidence, evidence_count = v.evidence_count,"
    " derived_from = v.derived_from, last_evidence_at = v.last_evidence_at,"
    " contradicts = v.contradicts, updated_at = :now"
    " FROM jsonb_to_recordset(:rows) AS v(id uuid, confidence float8, evidence_count int,"
    "  derived_from uuid[], last_evidence_at timestamptz, contradicts uuid[])"
    " WHERE facts.agent_id = :agent AND facts.id = v.id AND facts.status = 'active'"
).bindparams(bindparam("rows", type_=JSONB))
_WRITE_RETIRED = text(
    "UPDATE facts SET status = v.status, merged_into = v.merged_into,"
    " superseded_by = v.superseded_by, valid_to = :now, confidence = v.confidence,"
    " evidence_count = v.evidence_count, derived_from = v.derived_from,"
    " last_evidence_at = v.last_evidence_at, contradicts = v.contradicts, updated_at = :now"
    " FROM jsonb_to_recordset(:rows) AS v(id uuid, status text, merged_into uuid,"
    "  superseded_by uuid, confidence float8, evidence_count int, derived_from uuid[],"
    "  last_evidence_at timestamptz, contradicts uuid[])"
    " WHERE facts.agent_id = :agent AND facts.id = v.id AND facts.status = 'active'"
).bindparams(bindparam("rows", type_=JSONB))


def _ids(values: Sequence[uuid.UUID]) -> list[str]:
    return [str(v) for v in values]


def _active_row(r: _Row) -> dict[str, Any]:
    return {"id": str(r.id), "confidence": r.confidence, "evidence_count": r.evidence_count,
            "derived_from": _ids(r.derived_from), "contradicts": _ids(r.contradicts),
            "last_evidence_at": r.last_evidence_at.isoformat()}  # fmt: skip


def _retired_row(r: _Row) -> dict[str, Any]:
    return {**_active_row(r), "status": r.status,
            "merged_into": None if r.merged_into is None else str(r.merged_into),
            "superseded_by": None if r.superseded_by is None else str(r.superseded_by)}  # fmt: skip


async def _load(
    conn: AsyncConnection, agent_id: str, ids: list[uuid.UUID]
) -> dict[uuid.UUID, _Row]:
    stmt = (
        select(*_LOCK_COLUMNS, facts.c.merged_into, facts.c.superseded_by, facts.c.valid_to)
        .where(
            facts.c.agent_id == agent_id,
            facts.c.id == any_(bindparam("ids", type_=ARRAY(UUID(as_uuid=True)))),
        )
        .order_by(facts.c.id)  # a fixed lock order: two batches never deadlock
        .with_for_update()
    )
    return {
        r.id: _Row(
            id=r.id,
            status=r.status,
            confidence=r.confidence,
            evidence_count=r.evidence_count,
            derived_from=list(r.derived_from),
            last_evidence_at=r.last_evidence_at,
            contradicts=list(r.contradicts),
            merged_into=r.merged_into,
            superseded_by=r.superseded_by,
            valid_to=r.valid_to,
        )
        for r in await conn.execute(stmt, {"ids": ids})
    }


async def _write(conn: AsyncConnection, batch: _Batch) -> None:
    dirty = [r for r in batch.rows.values() if r.dirty]
    params = {"agent": batch.agent_id, "now": batch.now}
    active = [_active_row(r) for r in dirty if r.status == _ACTIVE]
    retired = [_retired_row(r) for r in dirty if r.status != _ACTIVE]
    if active:
        await conn.execute(_WRITE_ACTIVE, {**params, "rows": active})
    if retired:
        await conn.execute(_WRITE_RETIRED, {**params, "rows": retired})
    for row in dirty:
        if row.content is None:
            continue
        # No vector (the embedder failed): pending_embed puts it back in the queue.
        status = _ACTIVE if row.vector is not None else FactStatus.PENDING_EMBED.value
        await conn.execute(
            update(facts)
            .where(facts.c.agent_id == batch.agent_id, facts.c.id == row.id)
            .values(content=row.content, embedding=row.vector, status=status)
        )


async def apply_units(
    conn: AsyncConnection, agent_id: str, units: Sequence[Unit], now: datetime
) -> tuple[Counter[Action], list[Event], int]:
    """Apply ``units`` in the caller's transaction; returns the counts, the events to write
    and how many units were skipped because a fact was no longer active."""
    ids = sorted({i for u in units for i in u.ids}, key=lambda i: i.bytes)
    batch = _Batch(agent_id=agent_id, now=now, rows=await _load(conn, agent_id, ids))
    skipped = 0
    for unit in units:
        rows = [batch.rows.get(i) for i in unit.ids]
        if any(r is None or r.status != _ACTIVE for r in rows):
            skipped += 1
            continue
        if isinstance(unit, MergeUnit):
            _merge(batch, unit)
        elif isinstance(unit, SupersedeUnit):
            _supersede(batch, unit)
        else:
            _contradict(batch, unit)
    await _write(conn, batch)
    return batch.counts, batch.events, skipped
