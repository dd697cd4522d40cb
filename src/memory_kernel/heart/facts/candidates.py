"""What a batch of facts knows while it decides (pure): the current facts it read or created,
and each item's candidates — the facts the policy compares it with.

Two kinds of batch use it: new facts (``learn_many``) and pending facts getting their
vectors (the embedding queue). The service reads the candidates of a chunk of the batch at a
time (``store.read_candidates``) and hands them to :meth:`AgentState.absorb`.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

import numpy as np

from memory_kernel.heart.facts.admission import FactAdmission
from memory_kernel.heart.facts.normalise import TextFeatures, features
from memory_kernel.models.facts import Fact, FactInput
from memory_kernel.vectors import Vector

__all__ = ["AgentState", "Candidate", "Found", "Item", "Known", "Prepared", "Waiting"]


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


@dataclass(frozen=True, slots=True)
class Waiting:
    """A pending fact with its new vector, as a batch item."""

    fact: Fact
    vector: Vector
    # Its subject was settled when it was learned (a pending fact holds its subject): the
    # read looks for similar facts only, never for the fact's own row by its subject.
    subject_key: None = None

    @property
    def content(self) -> str:
        return self.fact.content

    @property
    def features(self) -> TextFeatures:
        return features(self.fact.content)


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


@dataclass(frozen=True, slots=True)
class Candidate:
    """A current fact the new one may relate to. ``similarity`` is the cosine of the two
    embeddings (``None`` when one of them has no vector yet)."""

    id: uuid.UUID
    features: TextFeatures
    subject_key: str | None
    similarity: float | None
    valid_from: datetime


@dataclass(slots=True)
class Found:
    """What one read found for some items of a batch (keyed by their batch index): the
    current facts of their subjects (with vectors), the nearest searchable facts of each
    item with a vector (without: their similarity came with them), and the current facts
    with the text key of each item without one (with vectors)."""

    by_subject: list[Known] = field(default_factory=list)
    nearest: dict[int, list[tuple[Known, float]]] = field(default_factory=dict)
    same_text: dict[int, list[Known]] = field(default_factory=dict)


class AgentState:
    """The candidates of one agent's items and the running state of the batch."""

    def __init__(self, k: int, capacity: int) -> None:
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

    def absorb(self, found: Found) -> None:
        """Take in what a read found. A stored fact already known keeps what the batch
        knows of it; one the batch retired stays retired."""
        for known in found.by_subject:
            self.add_known(known)
        for index, near in found.nearest.items():
            self.similar[index] = [(known.id, sim) for known, sim in near]
            for known, _ in near:
                if known.id not in self.known:
                    self.add_known(known)
        for index, same in found.same_text.items():
            self.same_text[index] = [known.id for known in same]
            for known in same:
                if known.id not in self.known:
                    self.add_known(known)

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
            words = p.features.words
            stored = [i for i in self.same_text.get(index, []) if self._has_words(i, words)]
            for fact_id in [*stored, *self.new_by_words.get(words, [])]:
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

    def _has_words(self, fact_id: uuid.UUID, words: tuple[str, ...]) -> bool:
        """The text key is a hash of the words' characters: the words themselves decide."""
        known = self.known.get(fact_id)
        return known is not None and known.features.words == words

    def _batch_similar(self, vector: Vector) -> list[tuple[uuid.UUID, float]]:
        if self._matrix is None or not self.new_ids:
            return []
        sims = self._matrix[: len(self.new_ids)] @ vector
        want = min(self.k * 2, len(sims))
        top = np.argpartition(-sims, want - 1)[:want]
        return [(self.new_ids[i], float(sims[i])) for i in top]

    def _cosine(self, fact_id: uuid.UUID, vector: Vector | None) -> float | None:
        other = self.known[fact_id].vector
        if other is None or vector is None:
            return None
        return float(np.dot(other, vector))

    def _candidate(self, fact_id: uuid.UUID, sim: float | None) -> Candidate:
        known = self.known[fact_id]
        return Candidate(fact_id, known.features, known.subject_key, sim, known.valid_from)
