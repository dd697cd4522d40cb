"""The learn engine: one batch of facts, decided in input order, written in one transaction.

``learn`` is a batch of one, so single and batch learns share every rule. Within a batch the
facts are decided one after the other against the stored facts *and* the batch's earlier
facts (a duplicate inside the batch is reinforced, a later value supersedes an earlier one),
then everything is written with a handful of bulk statements. The candidates are read a
chunk at a time, the next chunk's read running on the server while this process decides the
current one.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import numpy.typing as npt
from sqlalchemy.ext.asyncio import AsyncConnection

from memory_kernel.heart.facts import learn_sql
from memory_kernel.heart.facts import repository as repo
from memory_kernel.heart.facts.admission import FactAdmission
from memory_kernel.heart.facts.normalise import TextFeatures, features
from memory_kernel.heart.facts.policy import Candidate, LearnPlan, NewFact, plan_learn, reinforced
from memory_kernel.heart.facts.relation import RelationThresholds
from memory_kernel.heart.facts.writes import Writes, apply_writes, fact_event
from memory_kernel.models.enums import EventKind, FactStatus
from memory_kernel.models.facts import Fact, FactInput, LearnAction, LearnOutcome
from memory_kernel.storage.search import AnyRow

__all__ = ["Prepared", "learn_batch"]

Vector = npt.NDArray[np.float32]


@dataclass(slots=True)
class Prepared:
    """One validated input with everything decided before the database is touched."""

    input: FactInput
    subject_key: str | None
    features: TextFeatures
    admission: FactAdmission
    confidence: float
    vector: Vector | None = None


@dataclass(slots=True)
class _Known:
    """A current fact during the batch: a stored one, or one this batch created."""

    id: uuid.UUID
    content: str
    subject_key: str | None
    valid_from: datetime
    vector: Vector | None
    row: dict[str, Any] | None = None  # set for facts created by this batch

    @property
    def features(self) -> TextFeatures:
        # On demand (and cached by text): most neighbours fetched never become candidates.
        return features(self.content)


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


class _Agent:
    """The candidates of one agent's items and the running state of the batch."""

    def __init__(self, thresholds: RelationThresholds, k: int, capacity: int) -> None:
        self.t = thresholds
        self.k = k
        self.capacity = capacity
        self.known: dict[uuid.UUID, _Known] = {}
        # Retired by this batch: a later chunk's read (same stored state) must not revive it.
        self.retired: set[uuid.UUID] = set()
        self.subject_ids: dict[str, set[uuid.UUID]] = {}
        self.similar: dict[int, list[tuple[uuid.UUID, float]]] = {}
        self.same_text: dict[int, list[uuid.UUID]] = {}
        # The batch's own facts with vectors, as a matrix: one product per item, not a loop.
        self.new_ids: list[uuid.UUID] = []
        self.rows: dict[uuid.UUID, dict[str, Any]] = {}  # rows this batch creates, by id
        # The batch's own facts by their words: what a read finds by text for a stored fact.
        self.new_by_words: dict[tuple[str, ...], list[uuid.UUID]] = {}
        self._matrix: Vector | None = None

    def add_new(self, known: _Known) -> None:
        self.add_known(known)
        self.new_by_words.setdefault(known.features.words, []).append(known.id)
        if known.row is not None:
            self.rows[known.id] = known.row
        if known.vector is not None:
            if self._matrix is None:
                self._matrix = np.zeros((self.capacity, len(known.vector)), dtype=np.float32)
            self._matrix[len(self.new_ids)] = known.vector
            self.new_ids.append(known.id)

    def _batch_similar(self, vector: Vector) -> list[tuple[uuid.UUID, float]]:
        if self._matrix is None or not self.new_ids:
            return []
        sims = self._matrix[: len(self.new_ids)] @ vector
        want = min(self.k * 2, len(sims))
        top = np.argpartition(-sims, want - 1)[:want]
        return [(self.new_ids[i], float(sims[i])) for i in top]

    def add_known(self, known: _Known) -> None:
        if known.id in self.retired:
            return
        self.known[known.id] = known
        if known.subject_key:
            self.subject_ids.setdefault(known.subject_key, set()).add(known.id)

    def retire(self, fact_id: uuid.UUID) -> None:
        self.retired.add(fact_id)
        known = self.known.pop(fact_id, None)
        if known is not None and known.subject_key:
            self.subject_ids[known.subject_key].discard(fact_id)

    def candidates(self, index: int, p: Prepared) -> list[Candidate]:
        """Same-subject facts, the nearest stored facts and the batch's own earlier facts,
        as one list of the ``k`` most similar (same-subject ones always included)."""
        sims: dict[uuid.UUID, float | None] = {}
        for fact_id, sim in self.similar.get(index, []):
            if fact_id in self.known:
                sims[fact_id] = sim
        if p.vector is None:  # matched by its words, among stored facts and the batch's own
            for fact_id in [
                *self.same_text.get(index, []),
                *self.new_by_words.get(p.features.words, []),
            ]:
                if fact_id in self.known:
                    sims.setdefault(fact_id, None)
        else:
            for fact_id, sim in self._batch_similar(p.vector):
                if fact_id in self.known:
                    sims[fact_id] = sim
        ranked = sorted(sims.items(), key=lambda kv: -(kv[1] if kv[1] is not None else 2.0))
        chosen = dict(ranked[: self.k])
        for fact_id in self.subject_ids.get(p.subject_key or "", set()):
            chosen.setdefault(fact_id, self._cosine(fact_id, p.vector))
        return [self._candidate(fact_id, sim) for fact_id, sim in chosen.items()]

    def _cosine(self, fact_id: uuid.UUID, vector: Vector | None) -> float | None:
        other = self.known[fact_id].vector
        if other is None or vector is None:
            return None
        return float(np.dot(other, vector))

    def _candidate(self, fact_id: uuid.UUID, sim: float | None) -> Candidate:
        known = self.known[fact_id]
        return Candidate(fact_id, known.features, known.subject_key, sim, known.valid_from)


async def _load_agent(
    conn: AsyncConnection,
    agent_id: str,
    items: list[tuple[int, Prepared]],
    state: _Agent,
    fetch: int,
) -> None:
    """Read the candidates of ``items`` (``fetch`` nearest facts per vector) into ``state``."""
    keys = sorted({p.subject_key for _, p in items if p.subject_key})
    with_vec = [(i, p.vector) for i, p in items if p.vector is not None]
    wordy = [(i, p) for i, p in items if p.vector is None]
    found = await learn_sql.read_candidates(
        conn,
        agent_id,
        vectors=[v for _, v in with_vec],
        keys=keys,
        k=fetch,
        texts=[p.input.content for _, p in wordy],
    )
    for row in found.by_subject:
        state.add_known(_known(row, row.embedding))
    for (i, _), rows in zip(with_vec, found.nearest, strict=True):
        state.similar[i] = [(row.id, 1.0 - float(row.distance)) for row in rows]
        for row in rows:
            if row.id not in state.known:
                state.add_known(_known(row, None))
    for (i, p), rows in zip(wordy, found.same_text, strict=True):
        state.same_text[i] = [r.id for r in rows if features(r.content).words == p.features.words]
        for row in rows:
            if row.id not in state.known:
                state.add_known(_known(row, row.embedding))


def _known(row: AnyRow, vector: Any) -> _Known:
    if vector is not None and hasattr(vector, "to_numpy"):
        vector = vector.to_numpy()  # pgvector's own Vector type, depending on the driver path
    vec = None if vector is None else np.asarray(vector, dtype=np.float32)
    return _Known(row.id, row.content, row.subject_key, row.valid_from, vec)


@dataclass(slots=True)
class _Decided:
    """One item's decision, kept until the writes are done and the outcome can be built."""

    plan: LearnPlan | None  # None: rejected by the admission gate
    row: dict[str, Any] | None  # the new (or rejected) row, if one was written


def _decide(index: int, p: Prepared, at: datetime, state: _Agent, writes: Writes) -> _Decided:
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
    state.add_new(_Known(new_id, p.input.content, p.subject_key, at, p.vector, row))
    return _Decided(plan=plan, row=row)


def _retire(
    old_id: uuid.UUID, new_id: uuid.UUID, at: datetime, state: _Agent, writes: Writes
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


def _link(old_id: uuid.UUID, new_id: uuid.UUID, state: _Agent, writes: Writes) -> None:
    known = state.known.get(old_id)
    if known is not None and known.row is not None:
        known.row["contradicts"].append(new_id)
    else:
        writes.contradict.append((old_id, new_id))


def _reinforce(
    target: uuid.UUID, p: Prepared, at: datetime, plan: LearnPlan, state: _Agent, writes: Writes
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


#: Items per pipelined read of a batch.
_READ_CHUNK = 64


@dataclass(frozen=True, slots=True)
class _ReadJob:
    """The candidates to read for one agent's items of a stretch of the batch; items
    before ``end`` (an input index) are all covered once it and the jobs before it ran."""

    agent_id: str
    items: list[tuple[int, Prepared]]
    end: int


def _reads(groups: dict[str, list[tuple[int, Prepared]]]) -> list[_ReadJob]:
    """The batch's reads in input order: for every ``_READ_CHUNK`` items, one read per agent
    with admitted items among them (the last one of the stretch ends it)."""
    total = sum(len(m) for m in groups.values())
    jobs: list[_ReadJob] = []
    for start in range(0, total, _READ_CHUNK):
        end = min(start + _READ_CHUNK, total)
        stretch = [
            (agent_id, [(i, p) for i, p in members if start <= i < end and p.admission.admitted])
            for agent_id, members in groups.items()
        ]
        reading = [(a, m) for a, m in stretch if m] or [("", [])]  # ("", []): nothing to read
        last = len(reading) - 1
        jobs += [_ReadJob(a, m, end if j == last else start) for j, (a, m) in enumerate(reading)]
    return jobs


async def _load(
    conn: AsyncConnection, job: _ReadJob, states: dict[str, _Agent], fetch: int
) -> None:
    if job.items:
        await _load_agent(conn, job.agent_id, job.items, states[job.agent_id], fetch)


async def _decide_all(
    conn: AsyncConnection,
    items: Sequence[Prepared],
    reads: list[_ReadJob],
    states: dict[str, _Agent],
    fetch: int,
    now: datetime,
    writes: Writes,
) -> list[_Decided]:
    """Decide every item in input order, pipelined: while the items a read covers are
    decided here, the server already runs the next read (two cores at work, not one
    waiting for the other)."""
    decided: list[_Decided] = []
    ahead: asyncio.Task[None] | None = None
    try:
        for j, job in enumerate(reads):
            await (_load(conn, job, states, fetch) if ahead is None else ahead)
            ahead = None
            if j + 1 < len(reads):
                ahead = asyncio.create_task(_load(conn, reads[j + 1], states, fetch))
                await asyncio.sleep(0)  # let it send its statement before deciding
            for i in range(len(decided), job.end):
                decided.append(_decide(i, items[i], now, states[items[i].input.agent_id], writes))
    finally:
        if ahead is not None:  # a decision failed: the transaction is abandoned anyway
            ahead.cancel()
            await asyncio.gather(ahead, return_exceptions=True)
    return decided


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
    groups: dict[str, list[tuple[int, Prepared]]] = {}
    for i, p in enumerate(items):
        groups.setdefault(p.input.agent_id, []).append((i, p))
    states = {a: _Agent(thresholds, k, capacity=len(m)) for a, m in groups.items()}
    # Spare neighbours only when earlier items of the batch may retire some of them.
    fetch = k if len(items) == 1 else k * 2
    writes = Writes()
    decided = await _decide_all(conn, items, _reads(groups), states, fetch, now, writes)
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
    p: Prepared, d: _Decided, state: _Agent, refreshed: dict[uuid.UUID, Fact]
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
