"""The learn engine: one batch of facts, decided in input order, written in one transaction.

``learn`` is a batch of one, so single and batch learns share every rule. Within a batch the
facts are decided one after the other against the stored facts *and* the batch's earlier
facts (a duplicate inside the batch is reinforced, a later value supersedes an earlier one),
then everything is written with a handful of bulk statements. The candidates are read a
chunk at a time (``batch_state.py``), the next chunk's read running on the server while this
process decides the current one.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import numpy.typing as npt
from sqlalchemy.ext.asyncio import AsyncConnection

from memory_kernel.heart.facts import repository as repo
from memory_kernel.heart.facts.batch_state import (
    AgentState,
    Item,
    Known,
    Prepared,
    decide_pipelined,
    read_jobs,
)
from memory_kernel.heart.facts.policy import LearnPlan, NewFact, plan_learn, reinforced
from memory_kernel.heart.facts.relation import RelationThresholds
from memory_kernel.heart.facts.writes import Writes, apply_writes, fact_event
from memory_kernel.models.enums import EventKind, FactStatus
from memory_kernel.models.facts import Fact, LearnAction, LearnOutcome

__all__ = ["learn_batch"]

Vector = npt.NDArray[np.float32]


def _row(
    p: Prepared, fact_id: uuid.UUID, status: FactStatus, at: datetime, created: datetime
) -> dict[str, Any]:
    inp = p.input
    return {
        "agent_id": inp.agent_id,
        "id": fact_id,
        "subject": inp.subject,
        "subject_key": p.subject_key if status is not FactStatus.REJECTED else None,
        "content": inp.content,
        "category": inp.category,
        "confidence": p.confidence,
        "status": status.value,
        "explicit": inp.explicit,
        "embedding": p.vector,
        "superseded_by": None,
        "merged_into": None,
        "contradicts": [],
        "derived_from": list(inp.derived_from),
        "evidence_count": 1,
        "last_evidence_at": at,
        "valid_from": at,
        "valid_to": None,
        "metadata": dict(inp.metadata),
        "created_at": created,
        "updated_at": at,
    }


def _row_fact(row: dict[str, Any]) -> Fact:
    data = {k: v for k, v in row.items() if k != "embedding"}
    data["contradicts"] = tuple(data["contradicts"])
    data["derived_from"] = tuple(data["derived_from"])
    return Fact.model_validate(data)


@dataclass(slots=True)
class _Decided:
    """One item's decision, kept until the writes are done and the outcome can be built."""

    plan: LearnPlan | None  # None: rejected by the admission gate
    row: dict[str, Any] | None  # the new (or rejected) row, if one was written


def _decide(index: int, p: Prepared, at: datetime, state: AgentState, writes: Writes) -> _Decided:
    agent_id = p.input.agent_id
    # Distinct, ordered creation instants: later facts of a batch sort as newer in history.
    created = at + timedelta(microseconds=index)
    if not p.admission.admitted:
        row = _row(p, uuid.uuid4(), FactStatus.REJECTED, at, created)
        writes.rows.append(row)
        writes.events.append(
            fact_event(agent_id, row["id"], EventKind.REJECTED, at, p.admission.reason.value)
        )
        return _Decided(plan=None, row=row)
    new = NewFact(features=p.features, subject_key=p.subject_key)
    plan = plan_learn(new, state.candidates(index, p), state.t)
    if plan.action is LearnAction.REINFORCED:
        assert plan.reinforce is not None
        _reinforce(plan.reinforce, p, at, plan, state, writes)
        return _Decided(plan=plan, row=None)
    status = FactStatus.ACTIVE if p.vector is not None else FactStatus.PENDING_EMBED
    row = _row(p, uuid.uuid4(), status, at, created)
    new_id: uuid.UUID = row["id"]
    writes.rows.append(row)
    details = {"action": plan.action.value, "pending": p.vector is None}
    writes.events.append(
        fact_event(
            agent_id, new_id, EventKind.LEARNED, at, plan.reason, score=plan.similarity, **details
        )
    )
    for old in plan.supersede:
        _retire(old.id, new_id, at, state, writes)
        writes.events.append(
            fact_event(agent_id, old.id, EventKind.SUPERSEDED, at, old.reason,
                   score=old.similarity, related_id=new_id)
        )  # fmt: skip
    for old in plan.contradicts:
        row["contradicts"].append(old.id)
        _link(old.id, new_id, state, writes)
        for a, b in ((new_id, old.id), (old.id, new_id)):
            writes.events.append(
                fact_event(agent_id, a, EventKind.CONTRADICTION, at, old.reason,
                       score=old.similarity, related_id=b)
            )  # fmt: skip
    state.add_new(Known(new_id, p.input.content, p.subject_key, at, p.vector, row))
    return _Decided(plan=plan, row=row)


def _retire(
    old_id: uuid.UUID, new_id: uuid.UUID, at: datetime, state: AgentState, writes: Writes
) -> None:
    known = state.known.get(old_id)
    if known is not None and known.row is not None:
        # Created earlier in this batch: write it already superseded.
        known.row.update(
            status=FactStatus.SUPERSEDED.value, superseded_by=new_id, valid_to=at, updated_at=at
        )
    else:
        writes.supersede.append((old_id, new_id))
    state.retire(old_id)


def _link(old_id: uuid.UUID, new_id: uuid.UUID, state: AgentState, writes: Writes) -> None:
    known = state.known.get(old_id)
    if known is not None and known.row is not None:
        known.row["contradicts"].append(new_id)
    else:
        writes.contradict.append((old_id, new_id))


def _reinforce(
    target: uuid.UUID, p: Prepared, at: datetime, plan: LearnPlan, state: AgentState, writes: Writes
) -> None:
    known = state.known[target]
    if known.row is not None:
        row = known.row
        row["evidence_count"] += 1
        row["confidence"] = reinforced(row["confidence"])
        row["last_evidence_at"] = row["updated_at"] = at
        row["derived_from"].extend(p.input.derived_from)
    else:
        writes.reinforce[target] += 1
        writes.derived.setdefault(target, []).extend(p.input.derived_from)
    writes.events.append(
        fact_event(p.input.agent_id, target, EventKind.REINFORCED, at, plan.reason,
               score=plan.similarity, content=p.input.content)
    )  # fmt: skip


async def learn_batch(
    conn: AsyncConnection,
    items: Sequence[Prepared],
    *,
    now: datetime,
    thresholds: RelationThresholds,
    k: int,
    restore: bool = True,
    locked: bool = False,
) -> list[LearnOutcome]:
    """Decide and write ``items`` in order, in the caller's transaction. ``restore=False``
    skips handing the planner settings back when the transaction ends right after anyway;
    ``locked``: the transaction already holds the agents' locks (``repo.opening``)."""
    saved = {} if locked else await repo.lock_agents(conn, (p.input.agent_id for p in items))
    groups: dict[str, list[tuple[int, Item]]] = {}
    for i, p in enumerate(items):
        groups.setdefault(p.input.agent_id, [])
        if p.admission.admitted:
            groups[p.input.agent_id].append((i, p))
    states = {a: AgentState(thresholds, k, capacity=len(m)) for a, m in groups.items()}
    # Spare neighbours only when earlier items of the batch may retire some of them.
    fetch = k if len(items) == 1 else k * 2
    writes = Writes()
    decided = await decide_pipelined(
        conn,
        read_jobs(groups, len(items)),
        states,
        fetch,
        lambda i: _decide(i, items[i], now, states[items[i].input.agent_id], writes),
    )
    agent_of: dict[uuid.UUID, str] = {}
    for p, d in zip(items, decided, strict=True):
        if d.row is not None:
            agent_of[d.row["id"]] = p.input.agent_id
        if d.plan is not None and d.plan.reinforce is not None:
            agent_of[d.plan.reinforce] = p.input.agent_id
    refreshed = await apply_writes(conn, writes, agent_of, now, restore=saved if restore else None)
    return [
        _outcome(p, d, states[p.input.agent_id], refreshed)
        for p, d in zip(items, decided, strict=True)
    ]


def _outcome(
    p: Prepared, d: _Decided, state: AgentState, refreshed: dict[uuid.UUID, Fact]
) -> LearnOutcome:
    if d.plan is None:
        assert d.row is not None
        return LearnOutcome(
            action=LearnAction.REJECTED, fact=_row_fact(d.row), reason=p.admission.reason.value
        )
    plan = d.plan
    if plan.reinforce is not None:
        if plan.reinforce in refreshed:
            fact = refreshed[plan.reinforce]
        else:
            fact = _row_fact(state.rows[plan.reinforce])
    else:
        assert d.row is not None
        fact = _row_fact(d.row)
    return LearnOutcome(
        action=plan.action,
        fact=fact,
        superseded=tuple(r.id for r in plan.supersede),
        contradicts=tuple(r.id for r in plan.contradicts),
        reason=plan.reason,
        pending_embedding=d.row is not None and p.vector is None,
        similarity=plan.similarity,
    )
