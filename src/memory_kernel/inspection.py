"""What a developer needs when an agent "forgot" something (``memory-kernel inspect``).

:func:`inspect_agent` reads, for one agent: counts by status per kind, the newest current
facts with the versions they superseded (following ``superseded_by`` backwards), the
decisions the gate rejected or soft-deleted with their reasons, the last context
reports ``post_turn`` persisted (``context_assembled`` events) and the turns waiting for
fact extraction (queued, failing, parked). Read-only; every query is
scoped by ``agent_id``. Rendering lives in :mod:`memory_kernel.inspection_render`.

From Python: ``await inspect_agent(kernel.database, "a1", limit=5)``.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from enum import StrEnum

from pydantic import Field
from sqlalchemy import case, func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from memory_kernel.brain.store import to_decision
from memory_kernel.consolidation import repository as consolidation_store
from memory_kernel.errors import ValidationError
from memory_kernel.heart.extraction import store as extraction_store
from memory_kernel.heart.facts.store import FACT_COLUMNS, to_fact
from memory_kernel.models.base import OutputModel
from memory_kernel.models.context import ContextReport
from memory_kernel.models.decisions import Decision
from memory_kernel.models.enums import EventKind, FactStatus, MemoryKind
from memory_kernel.models.extraction import ExtractionQueueState
from memory_kernel.models.facts import Fact
from memory_kernel.storage.database import Database
from memory_kernel.storage.tables import decisions, episodes, facts, memory_events
from memory_kernel.validation import check_agent_id

__all__ = [
    "AgentInspection",
    "ContextReportEntry",
    "DecisionState",
    "FactChain",
    "StatusCount",
    "inspect_agent",
]

# A chain longer than this is walked no further (a cycle would be a bug, not a reason to hang).
_MAX_CHAIN_HOPS = 100
_MAX_LIMIT = 1000
_DECISION_COLUMNS = [c for c in decisions.c if c.name not in ("embedding", "search_tsv")]


class DecisionState(StrEnum):
    """Decisions have no status column; their state is derived from ``active``/``finalized``."""

    PENDING = "pending"  # a deliberation not finalized yet
    FINALIZED = "finalized"
    REJECTED = "rejected"  # soft-deleted by the gate (or abandoned)


class StatusCount(OutputModel):
    kind: MemoryKind
    status: str
    count: int


class FactChain(OutputModel):
    """A current fact and the versions it replaced, newest first (``previous[0]`` is the one
    it superseded directly)."""

    fact: Fact
    previous: tuple[Fact, ...] = ()


class ContextReportEntry(OutputModel):
    """One turn's context report, as ``post_turn`` stored it."""

    episode_id: uuid.UUID
    at: datetime
    report: ContextReport


class AgentInspection(OutputModel):
    agent_id: str
    counts: tuple[StatusCount, ...]
    facts: tuple[FactChain, ...]
    rejected_decisions: tuple[Decision, ...]
    context_reports: tuple[ContextReportEntry, ...]
    #: Turns waiting for fact extraction, failing, or parked after their last attempt.
    extraction: ExtractionQueueState = ExtractionQueueState()
    #: Turns, episodes and decisions an embedder outage left without a vector, per table
    #: (the agent's next ``consolidate`` embeds them); only those with some.
    without_vector: dict[str, int] = Field(default_factory=dict)

    def count(self, kind: MemoryKind, status: str) -> int:
        """How many memories of ``kind`` have ``status`` (0 when none)."""
        return sum(c.count for c in self.counts if c.kind is kind and c.status == status)


async def inspect_agent(database: Database, agent_id: str, *, limit: int = 10) -> AgentInspection:
    """Everything :class:`AgentInspection` lists for ``agent_id``; ``limit`` bounds each list."""
    check_agent_id(agent_id)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= _MAX_LIMIT:
        raise ValidationError(f"limit must be an integer between 1 and {_MAX_LIMIT}")
    async with database.connection() as conn:
        counts = await _counts(conn, agent_id)
        chains = await _fact_chains(conn, agent_id, limit)
        rejected = await _rejected_decisions(conn, agent_id, limit)
        reports = await _context_reports(conn, agent_id, limit)
        extraction = await extraction_store.counts(conn, agent_id)
        without_vector = {
            table: n
            for table in consolidation_store.VECTORED
            if (n := await consolidation_store.vectorless_count(conn, table, agent_id))
        }
    return AgentInspection(
        agent_id=agent_id,
        counts=counts,
        facts=chains,
        rejected_decisions=rejected,
        context_reports=reports,
        extraction=extraction,
        without_vector=without_vector,
    )


async def _counts(conn: AsyncConnection, agent_id: str) -> tuple[StatusCount, ...]:
    decision_state = case(
        (~decisions.c.active, DecisionState.REJECTED.value),
        (decisions.c.finalized, DecisionState.FINALIZED.value),
        else_=DecisionState.PENDING.value,
    )
    queries = (
        (MemoryKind.FACT, facts.c.status, facts),
        (MemoryKind.EPISODE, episodes.c.status, episodes),
        (MemoryKind.DECISION, decision_state, decisions),
    )
    found: list[StatusCount] = []
    for kind, status, table in queries:
        rows = await conn.execute(
            select(status.label("status"), func.count().label("n"))
            .select_from(table)
            .where(table.c.agent_id == agent_id)
            .group_by(status)
            .order_by(status)
        )
        found += [StatusCount(kind=kind, status=r.status, count=int(r.n)) for r in rows]
    return tuple(found)


async def _fact_chains(conn: AsyncConnection, agent_id: str, limit: int) -> tuple[FactChain, ...]:
    """The newest facts that nothing superseded, each with its predecessors."""
    rows = await conn.execute(
        select(*FACT_COLUMNS)
        .where(facts.c.agent_id == agent_id, facts.c.status != FactStatus.SUPERSEDED.value)
        .order_by(facts.c.created_at.desc(), facts.c.id)
        .limit(limit)
    )
    heads = [to_fact(r) for r in rows]
    older = await _predecessors(conn, agent_id, [h.id for h in heads])
    chains = []
    for head in heads:
        previous: list[Fact] = []
        frontier = [head.id]
        while frontier and len(previous) < _MAX_CHAIN_HOPS:
            step = sorted(
                (f for fid in frontier for f in older.get(fid, ())),
                key=lambda f: (f.valid_from, f.created_at),
                reverse=True,
            )
            previous += step
            frontier = [f.id for f in step]
        chains.append(FactChain(fact=head, previous=tuple(previous)))
    return tuple(chains)


async def _predecessors(
    conn: AsyncConnection, agent_id: str, ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, list[Fact]]:
    """``superseded_by`` id -> the facts it superseded, walked back hop by hop (one indexed
    query per hop for all chains at once)."""
    older: dict[uuid.UUID, list[Fact]] = {}
    frontier = list(ids)
    seen = set(frontier)
    for _ in range(_MAX_CHAIN_HOPS):
        if not frontier:
            break
        rows = await conn.execute(
            select(*FACT_COLUMNS).where(
                facts.c.agent_id == agent_id, facts.c.superseded_by.in_(frontier)
            )
        )
        step = [f for f in (to_fact(r) for r in rows) if f.id not in seen]
        for fact in step:
            if fact.superseded_by is not None:  # always: the query selected on it
                older.setdefault(fact.superseded_by, []).append(fact)
        seen.update(f.id for f in step)
        frontier = [f.id for f in step]
    return older


async def _rejected_decisions(
    conn: AsyncConnection, agent_id: str, limit: int
) -> tuple[Decision, ...]:
    rows = await conn.execute(
        select(*_DECISION_COLUMNS)
        .where(decisions.c.agent_id == agent_id, ~decisions.c.active)
        .order_by(decisions.c.updated_at.desc(), decisions.c.id)
        .limit(limit)
    )
    return tuple(to_decision(r) for r in rows)


async def _context_reports(
    conn: AsyncConnection, agent_id: str, limit: int
) -> tuple[ContextReportEntry, ...]:
    rows = await conn.execute(
        select(memory_events.c.memory_id, memory_events.c.created_at, memory_events.c.details)
        .where(
            memory_events.c.agent_id == agent_id,
            memory_events.c.event == EventKind.CONTEXT_ASSEMBLED.value,
        )
        .order_by(memory_events.c.created_at.desc(), memory_events.c.id)
        .limit(limit)
    )
    return tuple(
        ContextReportEntry(
            episode_id=r.memory_id,
            at=r.created_at,
            report=ContextReport.model_validate(r.details),
        )
        for r in rows
    )
