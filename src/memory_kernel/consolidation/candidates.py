"""Candidate pairs of one agent's facts: an inverted-file nearest-neighbour search in numpy.

Why not one HNSW query per fact: each costs about a millisecond in Postgres, so a 100k-fact
agent would spend minutes there. Here the agent's vectors are streamed once (one
sequential read into a preallocated float16 matrix, 77 MB per 100k facts at 384
dimensions, then put in fact-id order so the result does not depend on heap order), a coarse
spherical k-means on a sample splits them into cells of about ``cell_size`` facts, each fact
is stored in its nearest cell and searches its ``probes`` nearest cells, and exact cosines
are computed only between a cell's searchers and its residents — small matrix products,
never an n x n matrix. Each fact keeps its ``k`` nearest neighbours above the floor. Work
is n * probes * cell_size cosines, linear in the number of facts (plus n * cells for the
assignment, which grows with n but is the smaller part up to ~1M facts); the benchmark measures
the recall of planted duplicates (the default embedder's vectors are nearly random, the
hard case for cells).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from memory_kernel.consolidation.plans import Pair
from memory_kernel.vectors import Vector

__all__ = ["IvfParams", "VectorStore", "candidate_pairs"]

I64 = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class IvfParams:
    k: int  # neighbours kept per fact
    floor: float  # lowest cosine kept
    cell_size: int = 256
    probes: int = 8
    max_cells: int = 4096
    train_sample: int = 16_384
    iterations: int = 4
    block: int = 4096  # rows per assignment matrix product (bounds temporary memory)
    seed: int = 0


class VectorStore:
    """The streamed vectors of one agent (float16, unit length) and their fact ids.

    Preallocated for ``capacity`` rows (grown if more arrive), so streaming never holds two
    copies of the matrix.
    """

    def __init__(self, dim: int, capacity: int = 0) -> None:
        self.dim = dim
        self.ids: list[uuid.UUID] = []
        self._data: npt.NDArray[np.float16] = np.zeros((max(capacity, 1), dim), np.float16)

    def add(self, ids: Iterable[uuid.UUID], vectors: Vector) -> None:
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        unit = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
        start, end = len(self.ids), len(self.ids) + len(unit)
        if end > len(self._data):
            grown = np.zeros((max(end, len(self._data) * 3 // 2), self.dim), np.float16)
            grown[:start] = self._data[:start]
            self._data = grown
        self._data[start:end] = unit
        self.ids.extend(ids)

    def sort_by_id(self) -> None:
        """Rows in fact-id order (one temporary copy of the matrix)."""
        order = sorted(range(len(self.ids)), key=lambda i: self.ids[i].bytes)
        self._data[: len(order)] = self._data[np.asarray(order, dtype=np.int64)]
        self.ids = [self.ids[i] for i in order]

    @property
    def matrix(self) -> npt.NDArray[np.float16]:
        return self._data[: len(self.ids)]

    def rows(self, index: I64) -> Vector:
        return self._data[index].astype(np.float32)


def _train(store: VectorStore, cells: int, p: IvfParams) -> Vector:
    """Coarse centroids: Lloyd iterations (spherical k-means) on a sample."""
    rng = np.random.default_rng(p.seed)
    n = len(store.ids)
    sample = store.rows(np.sort(rng.choice(n, size=min(n, p.train_sample), replace=False)))
    centroids = sample[rng.choice(len(sample), size=cells, replace=False)].copy()
    for _ in range(p.iterations):
        nearest = np.argmax(sample @ centroids.T, axis=1)
        order = np.argsort(nearest, kind="stable")
        used, starts = np.unique(nearest[order], return_index=True)
        sums = np.zeros_like(centroids)
        sums[used] = np.add.reduceat(sample[order], starts, axis=0)
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        empty = norms[:, 0] == 0
        # An empty cell keeps its old centroid rather than vanishing.
        sums[empty], norms[empty] = centroids[empty], 1.0
        centroids = (sums / norms).astype(np.float32)
    return centroids


def _groups(owner: I64, cell: I64, cells: int) -> list[I64]:
    """``owner`` grouped by ``cell``: the members of each cell, in order."""
    order = np.argsort(cell, kind="stable")
    by_cell = owner[order]
    bounds = np.searchsorted(cell[order], np.arange(cells + 1))
    return [by_cell[bounds[c] : bounds[c + 1]] for c in range(cells)]


def _assign(store: VectorStore, centroids: Vector, p: IvfParams) -> tuple[list[I64], list[I64]]:
    """Per cell: the facts stored there (their nearest cell) and the facts that search it
    (those with the cell among their ``probes`` nearest). A pair is found when one fact's
    cell is among the other's probes: cost n * probes * cell_size, not n * n."""
    probes = min(p.probes, len(centroids))
    homes: list[I64] = []
    visits: list[I64] = []
    for start in range(0, len(store.ids), p.block):
        scores = store.rows(np.arange(start, min(start + p.block, len(store.ids)))) @ centroids.T
        top = np.argpartition(-scores, probes - 1, axis=1)[:, :probes]
        homes.append(np.argmax(scores, axis=1).astype(np.int64))
        visits.append(top.reshape(-1).astype(np.int64))
    n, cells = len(store.ids), len(centroids)
    stored = _groups(np.arange(n, dtype=np.int64), np.concatenate(homes), cells)
    searching = _groups(
        np.repeat(np.arange(n, dtype=np.int64), probes), np.concatenate(visits), cells
    )
    return stored, searching


Found = tuple[I64, I64, npt.NDArray[np.float32]]  # (query, member, cosine) rows


def _cell_pairs(store: VectorStore, queries: I64, members: I64, p: IvfParams) -> Found:
    """Each query's ``k`` nearest members of the cell above the floor, by exact cosine."""
    none: Found = (np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.float32))
    if len(queries) == 0 or len(members) == 0:
        return none
    sims = store.rows(queries) @ store.rows(members).T
    sims[queries[:, None] == members[None, :]] = -1.0  # a fact is not its own neighbour
    rows, cols = np.nonzero(sims >= p.floor)  # few: most facts have no close neighbour
    if len(rows) == 0:
        return none
    return _nearest(queries[rows], members[cols], sims[rows, cols], p.k)


def _nearest(queries: I64, members: I64, values: npt.NDArray[np.float32], k: int) -> Found:
    """The ``k`` best rows of each query."""
    order = np.lexsort((-values, queries))
    queries, members, values = queries[order], members[order], values[order]
    first = np.searchsorted(queries, queries, side="left")
    keep = (np.arange(len(queries)) - first) < k
    return queries[keep], members[keep], values[keep]


def candidate_pairs(store: VectorStore, p: IvfParams) -> list[Pair]:
    """Pairs of facts among each other's ``k`` nearest neighbours, above ``p.floor``."""
    n = len(store.ids)
    if n < 2:
        return []
    cells = int(min(p.max_cells, max(1, n // p.cell_size)))
    if cells == 1:
        everyone = np.arange(n, dtype=np.int64)
        parts = [_cell_pairs(store, everyone, everyone, p)]
    else:
        stored, searching = _assign(store, _train(store, cells, p), p)
        parts = [
            _cell_pairs(store, queries, members, p)
            for members, queries in zip(stored, searching, strict=True)
        ]
    # A fact searches ``probes`` cells: its k nearest over all of them, not k from each
    # (a low floor, as the judge's bands use, would otherwise keep probes * k).
    queries, members, values = _nearest(
        np.concatenate([f[0] for f in parts]),
        np.concatenate([f[1] for f in parts]),
        np.concatenate([f[2] for f in parts]),
        p.k,
    )
    found: dict[tuple[int, int], float] = {}
    for i, j, s in zip(queries, members, values, strict=True):
        found[(int(i), int(j)) if i < j else (int(j), int(i))] = float(s)
    ids = store.ids
    # float16 storage rounds cosines by ~1e-3; the plan re-reads nothing, so round here
    # consistently (a pair at exactly a threshold is decided the same way every run).
    return [Pair(ids[i], ids[j], round(s, 4)) for (i, j), s in found.items()]
