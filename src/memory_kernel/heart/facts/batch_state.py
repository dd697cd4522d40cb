"""What a batch of facts knows while it decides: its items, the current facts it read or
created, and the reads that fill it — a chunk of the batch at a time, so that the next
chunk's read runs on the server while the current chunk is decided. Two kinds of batch use
it: new facts (``batch.py``) and pending facts getting their vectors (``pending.py``).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, TypeVar

import numpy as np
from sqlalchemy.ext.asyncio import AsyncConnection

from memory_kernel.heart.facts import learn_sql
from memory_kernel.heart.facts.admission import FactAdmission
from memory_kernel.heart.facts.normalise import TextFeatures, features
from memory_kernel.heart.facts.policy import Candidate
from memory_kernel.heart.facts.relation import RelationThresholds
from memory_kernel.models.facts import FactInput
from memory_kernel.storage.search import AnyRow
from memory_kernel.storage.vector import as_array

__all__ = [
    "READ_CHUNK", "AgentState", "Item", "Known", "Prepared", "ReadJob", "decide_pipelined",
    "read_jobs",
]  # fmt: skip

Vector = learn_sql.Vector
Decided = TypeVar("Decided")

#: Items per pipelined read of a batch.
READ_CHUNK = 64


class Item(Protocol):
    """What the reads and the candidate ranking need of a batch item."""

    @property
    def content(self) -> str: ...
    @property
    def subject_key(self) -> str | None: ...
    @property
    def features(self) -> TextFeatures: ...
    @property
    def vector(self) -> Vector | None: ...


@dataclass(slots=True)
class Prepared:
    """One validated input with everything decided before the database is touched."""

    input: FactInput
    subject_key: str | None
    features: TextFeatures
    admission: FactAdmission
    confidence: float
    vector: Vector | None = None

    @property
    def content(self) -> str:
        return self.input.content


@dataclass(slots=True)
class Known:
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


class AgentState:
    """The candidates of one agent's items and the running state of the batch."""

    def __init__(self, thresholds: RelationThresholds, k: int, capacity: int) -> None:
        self.t = thresholds
        self.k = k
        self.capacity = capacity
        self.known: dict[uuid.UUID, Known] = {}
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

    def add_new(self, known: Known) -> None:
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

    def add_known(self, known: Known) -> None:
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

    def candidates(self, index: int, p: Item) -> list[Candidate]:
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
    items: Sequence[tuple[int, Item]],
    state: AgentState,
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
        texts=[p.content for _, p in wordy],
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


def _known(row: AnyRow, vector: Any) -> Known:
    return Known(row.id, row.content, row.subject_key, row.valid_from, as_array(vector))


@dataclass(frozen=True, slots=True)
class ReadJob:
    """The reads of one stretch of the batch — one per agent with admitted items in it;
    once they ran, every item before ``end`` (an input index) has its candidates."""

    reads: list[tuple[str, list[tuple[int, Item]]]]
    end: int


def read_jobs(groups: Mapping[str, Sequence[tuple[int, Item]]], total: int) -> list[ReadJob]:
    """The reads of a batch of ``total`` items in input order, one job per ``READ_CHUNK``
    items (``groups``: the items to read for, by agent, with their input indexes)."""
    jobs: list[ReadJob] = []
    for start in range(0, total, READ_CHUNK):
        end = min(start + READ_CHUNK, total)
        stretch = [
            (agent_id, [(i, p) for i, p in members if start <= i < end])
            for agent_id, members in groups.items()
        ]
        jobs.append(ReadJob([(a, m) for a, m in stretch if m], end))
    return jobs


async def _load(
    conn: AsyncConnection, job: ReadJob, states: Mapping[str, AgentState], fetch: int
) -> None:
    for agent_id, items in job.reads:
        await _load_agent(conn, agent_id, items, states[agent_id], fetch)


async def decide_pipelined(
    conn: AsyncConnection,
    reads: list[ReadJob],
    states: Mapping[str, AgentState],
    fetch: int,
    decide: Callable[[int], Decided],
) -> list[Decided]:
    """``decide`` every item in input order, pipelined: while the items a read covers are
    decided here, the server already runs the next read (two cores at work, not one
    waiting for the other)."""
    decided: list[Decided] = []
    ahead: asyncio.Task[None] | None = None
    try:
        for j, job in enumerate(reads):
            await (_load(conn, job, states, fetch) if ahead is None else ahead)
            ahead = None
            if j + 1 < len(reads):
                ahead = asyncio.create_task(_load(conn, reads[j + 1], states, fetch))
                await asyncio.sleep(0)  # let it send its statement before deciding
            decided += [decide(i) for i in range(len(decided), job.end)]
    finally:
        if ahead is not None:  # a decision failed: the transaction is abandoned anyway
            ahead.cancel()
            await asyncio.gather(ahead, return_exceptions=True)
    return decided
