"""Pure read-time resolution of a slot with two current values.

Write-time supersession retires an older fact only when the rules or the update scorer are
sure (precision first). When they are not, both facts stay current, and recall resolves
them instead: among the facts a search returns, a newer fact that probably gives a new
value of an older one's slot (the update scorer at or above its ``read`` threshold) is
shown first, and the older one right after it, marked with the newer one's id (the host
can show it as dated). Nothing is written; the next fact learned may settle it either way.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import TypeVar

__all__ = ["MAX_COMPARED", "newest_first"]

#: Hits compared pairwise (the top of the list): the pairs grow as its square.
MAX_COMPARED = 20

H = TypeVar("H")


def newest_first(
    hits: Sequence[H],
    *,
    key: Callable[[H], uuid.UUID],
    newer: Callable[[H, H], bool],
    updates: Callable[[H, H], bool],
    closeness: Callable[[H, H], float] = lambda _old, _new: 0.0,
) -> tuple[list[H], dict[uuid.UUID, uuid.UUID]]:
    """``hits`` reordered so that a newer hit updating an older one comes right before it,
    and ``{older id: newer id}`` for every older hit so placed. ``updates(old, new)``: the
    newer one gives a new value of the older one's slot. Where several newer hits do, the
    one closest to the older one (``closeness``; without it, the best ranked) replaces it:
    a search puts facts that share a word or two with the older one beside its own
    successor ("Ilse's physio moved her sessions" beside "Ilse keeps 4 hens" and "a fox
    got one of Ilse's hens")."""
    top = list(hits[:MAX_COMPARED])
    best: dict[uuid.UUID, tuple[float, uuid.UUID]] = {}
    # Every pair, whichever ranks first: an older value recalled below its newer one is
    # still out of date, and must be marked so (not only reordered when it ranks above).
    for i, first in enumerate(top):
        for second in top[i + 1 :]:
            if newer(second, first):
                old, new = first, second
            elif newer(first, second):
                old, new = second, first
            else:
                continue
            close = closeness(old, new)
            if (key(old) not in best or close > best[key(old)][0]) and updates(old, new):
                best[key(old)] = (close, key(new))
    replaced_by = {old: new for old, (_, new) in best.items()}
    placed: set[uuid.UUID] = set()
    ordered: list[H] = []
    by_id = {key(h): h for h in top}

    def place(hit: H) -> None:
        if key(hit) in placed:
            return
        successor = replaced_by.get(key(hit))
        if successor is not None and successor not in placed:
            placed.add(key(hit))  # guards a cycle; the newest goes first
            place(by_id[successor])
            placed.discard(key(hit))
        if key(hit) not in placed:
            placed.add(key(hit))
            ordered.append(hit)

    for hit in top:
        place(hit)
    return ordered + list(hits[MAX_COMPARED:]), replaced_by
