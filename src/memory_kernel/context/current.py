"""Read-time resolution of a slot with two current values among recalled facts (pure).

Write-time supersession retires an older fact only when it is sure (precision first, and
facts extracted from turns may be kept out of value-change supersession), so two current
facts can give one slot two values: "Noor lives in Leeds" (January) and "Noor moved to
Manchester" (April). Recall resolves them when it reads them: a newer recalled fact that
probably gives an older one's slot a new value (``updates``: the facts' read scorer for the
query, ``FactService.slot_judge``, the rule ``facts.search`` uses too) wins —

- the older one is ranked just under it and linked to it (``MemoryHit.replaced_by``), so
  the budget takes the newer one first, diversity sampling keeps the newer one of the two
  when they look alike, and the context shows the older one, if at all, dated with the
  note ``(later replaced: …)``;
- the newer one carries the older one's text in ``supersedes``, as if the supersession had
  been written: a turn or episode that states the older value is demoted under it and
  noted too (``context.stale``) — unless the newer one was extracted from a conversation
  (``context.provenance``): then the pair is a guess about two guesses (two clauses the
  extractor gave no common key), and what was said stays as said, dated, un-noted.

Nothing is written; the next fact learned may settle the slot either way.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence

from memory_kernel.context.provenance import said_at
from memory_kernel.heart.facts.recency import newest_first
from memory_kernel.models.context import MemoryHit, MemorySource

__all__ = ["resolve_current"]

_DEMOTION = 1e-6


def _newest(start: uuid.UUID, replaced_by: dict[uuid.UUID, uuid.UUID]) -> uuid.UUID:
    """The end of ``start``'s chain of newer values (a cycle stops where it closes)."""
    seen = {start}
    at = start
    while (nxt := replaced_by.get(at)) is not None and nxt not in seen:
        seen.add(nxt)
        at = nxt
    return at


def resolve_current(
    hits: Sequence[MemoryHit], *, updates: Callable[[MemoryHit, MemoryHit], bool],
    closeness: Callable[[MemoryHit, MemoryHit], float] = lambda _old, _new: 0.0,
) -> list[MemoryHit]:  # fmt: skip
    """``hits`` (best first) with every recalled fact that a newer recalled fact updates
    (``updates(old, new)``; of several, the closest) scored just under the newest of its
    slot and linked to it, and that newest fact carrying the older texts in
    ``supersedes``; best first again."""
    facts = [h for h in hits if h.source is MemorySource.FACT]
    if len(facts) < 2:
        return list(hits)
    _, replaced_by = newest_first(
        facts, key=lambda h: h.id, newer=lambda a, b: a.created_at > b.created_at,
        updates=updates, closeness=closeness,
    )  # fmt: skip
    if not replaced_by:
        return list(hits)
    by_id = {h.id: h for h in facts}
    head = {old: _newest(old, replaced_by) for old in replaced_by}
    older: dict[uuid.UUID, list[str]] = {}
    for old, newest in head.items():
        if old != newest:
            older.setdefault(newest, []).append(by_id[old].text)
    out = []
    for hit in hits:
        winner = head.get(hit.id)
        if winner is not None and winner != hit.id:
            score = min(hit.score, by_id[winner].score - _DEMOTION)
            hit = hit.model_copy(update={"score": score, "replaced_by": winner})
        elif hit.id in older and said_at(hit) is None:
            kept = tuple(dict.fromkeys((*hit.supersedes, *older[hit.id])))
            hit = hit.model_copy(update={"supersedes": kept})
        out.append(hit)
    out.sort(key=lambda h: (-h.score, str(h.id)))
    return out
