"""Union-find over candidate pairs: connected components without a similarity matrix.

Memory and time are linear in the number of pairs (path halving + union by size), so a
100k-fact agent whose kNN search yields a few hundred thousand pairs clusters in well under
a second.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Generic, TypeVar

__all__ = ["UnionFind", "connected_components"]

T = TypeVar("T", bound=Hashable)


class UnionFind(Generic[T]):
    """Disjoint sets of hashable items, created on first sight."""

    def __init__(self) -> None:
        self._parent: dict[T, T] = {}
        self._size: dict[T, int] = {}

    def find(self, item: T) -> T:
        parent = self._parent.setdefault(item, item)
        self._size.setdefault(item, 1)
        while parent != item:
            grand = self._parent[parent]
            self._parent[item] = grand  # path halving keeps trees flat
            item, parent = grand, self._parent[grand]
        return item

    def union(self, a: T, b: T) -> T:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return ra
        if self._size[ra] < self._size[rb]:
            ra, rb = rb, ra
        self._parent[rb] = ra
        self._size[ra] += self._size[rb]
        return ra

    def groups(self) -> list[list[T]]:
        """Every set with more than one member, members in first-seen order."""
        found: dict[T, list[T]] = {}
        for item in self._parent:
            found.setdefault(self.find(item), []).append(item)
        return [members for members in found.values() if len(members) > 1]


def connected_components(edges: Iterable[tuple[T, T]]) -> list[list[T]]:
    """The groups of items joined by ``edges`` (pairs), singletons left out."""
    sets: UnionFind[T] = UnionFind()
    for a, b in edges:
        sets.union(a, b)
    return sets.groups()
