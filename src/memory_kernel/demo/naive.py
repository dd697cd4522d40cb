"""The baseline the demo compares with: a naive memory that stores everything and injects
everything relevant-looking.

It is what the design notes describe before their fixes: every fact is appended (no
supersession), every turn opens a new episode (no dedup), every turn of a decision frame
records its reply as a decision (no gate), and every turn injects the vector top-k of all
of it (no relevance gating, no recall dedup). It uses the same embedder and the same token
counter as the kernel in the same run, so the numbers compare like with like.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from memory_kernel.protocols import Embedder, TokenCounter
from memory_kernel.vectors import Vector

__all__ = ["NAIVE_DECISION_FRAMES", "NAIVE_TOP_K", "Injection", "NaiveMemory"]

#: Vector top-k per turn: a typical "retrieve 5 memories" setting.
NAIVE_TOP_K = 5
#: The frames that recorded a decision for every turn before the gate (seed 009.5).
NAIVE_DECISION_FRAMES = frozenset({"decision", "task", "debug"})


@dataclass(frozen=True, slots=True)
class _Item:
    kind: str
    text: str
    vector: Vector


@dataclass(frozen=True, slots=True)
class Injection:
    items: tuple[str, ...]
    text: str
    tokens: int


class NaiveMemory:
    """A plain list plus a vector top-k."""

    def __init__(self, embedder: Embedder, counter: TokenCounter, *, k: int = NAIVE_TOP_K):
        self._embedder = embedder
        self._counter = counter
        self.k = k
        self._items: list[_Item] = []
        self.searches = 0

    async def store(self, kind: str, text: str) -> None:
        vector = (await self._embedder.embed([text]))[0]
        self._items.append(_Item(kind, text, np.asarray(vector, dtype=np.float32)))

    async def inject(self, query: str) -> Injection:
        """The top-k stored items by cosine to ``query``, rendered as one prompt section."""
        self.searches += 1
        if not self._items:
            return Injection((), "", 0)
        q = np.asarray((await self._embedder.embed([query]))[0], dtype=np.float32)
        matrix = np.stack([i.vector for i in self._items])
        norms = np.linalg.norm(matrix, axis=1) * (float(np.linalg.norm(q)) or 1.0)
        scores = matrix @ q / np.where(norms == 0.0, 1.0, norms)
        # Stable sort: equal scores keep insertion order, so runs are reproducible.
        best = np.argsort(-scores, kind="stable")[: self.k]
        items = tuple(self._items[i].text for i in best)
        text = "## Memory\n" + "\n".join(f"- {t}" for t in items)
        return Injection(items, text, self._counter.count(text))

    def count(self, kind: str | None = None) -> int:
        return sum(1 for i in self._items if kind is None or i.kind == kind)

    def texts(self, kind: str) -> list[str]:
        return [i.text for i in self._items if i.kind == kind]
