"""How the supersession of a fact reaches turns and episodes (pure).

A fact that replaced an older version (``Spec 006 status: PLANNED`` → ``… Shipped``) carries
the older versions' texts (``MemoryHit.supersedes``, loaded by recall). A recalled turn or
episode **states a replaced value** of that fact when

- it is older than the current fact (it was said before the change was learned; for a fact
  extracted from a conversation, before the change was *said*, and it is not the turn the
  fact was taken from: ``context.provenance``),
- it holds every word the older version has and the current one lacks (the old value:
  ``planned``), and
- it holds at least half of the words both versions share (the subject: ``spec 006
  status``), so "planned" in an unrelated turn does not count.

Such a hit is **demoted** below the current fact (its score becomes just under the fact's,
so the budget takes the fact first and recall lists it first; not under a fact extracted
from a conversation, which replaced one clause of the turn: the note marks that clause and
the turn keeps its rank for the rest it holds), **linked** to it
(``MemoryHit.replaced_by``) and, in the context, shown with its date and the note
``(later replaced: <current fact>)``. Nothing is hidden: what was said stays findable, but it
never reads as current. A turn or episode newer than the fact is left alone — it may be the
user changing the value again.
"""

from __future__ import annotations

from collections.abc import Sequence

from memory_kernel.context.provenance import said_at, source_turn
from memory_kernel.models.context import ContextItem, MemoryHit, MemorySource, NodeContent
from memory_kernel.similarity import words

__all__ = ["REPLACED_NOTE", "demote_in_sections", "demote_replaced", "states_replaced"]

REPLACED_NOTE = "(later replaced: {current})"
_HAPPENED = frozenset({MemorySource.TURN, MemorySource.EPISODE})
_DEMOTION = 1e-6


def states_replaced(said: str, current: str, older: str) -> bool:
    """Whether ``said`` states the value ``older`` had before ``current`` replaced it."""
    now, then, text = words(current), words(older), words(said)
    value, subject = then - now, then & now
    return bool(value) and value <= text and 2 * len(subject & text) >= len(subject)


def _replacer(hit: MemoryHit, facts: Sequence[MemoryHit]) -> MemoryHit | None:
    for fact in facts:
        # An extracted fact became true when it was said, not when it was learned: the
        # turn it was taken from (and anything said after it) states it, not a replaced value.
        if hit.created_at >= (said_at(fact) or fact.created_at) or hit.id == source_turn(fact):
            continue
        if any(states_replaced(hit.text, fact.text, old) for old in fact.supersedes):
            return fact
    return None


def demote_replaced(hits: Sequence[MemoryHit]) -> list[MemoryHit]:
    """``hits`` with every turn or episode that states a value a recalled fact replaced
    scored just under that fact and linked to it (``replaced_by``); best first again."""
    facts = [h for h in hits if h.source is MemorySource.FACT and h.supersedes]
    if not facts:
        return list(hits)
    out = []
    for hit in hits:
        fact = _replacer(hit, facts) if hit.source in _HAPPENED else None
        if fact is not None:
            # An extracted fact replaced one clause of what was said: the note marks that
            # clause, and the turn keeps its rank for whatever else it holds.
            score = hit.score if said_at(fact) else min(hit.score, fact.score - _DEMOTION)
            hit = hit.model_copy(update={"score": score, "replaced_by": fact.id})
        out.append(hit)
    out.sort(key=lambda h: (-h.score, str(h.id)))
    return out


def demote_in_sections(sections: Sequence[NodeContent]) -> list[NodeContent]:
    """:func:`demote_replaced` across the sections of a context (the fact may be in one
    node, the turn in another): demoted items carry their new score and the note."""
    hits = [i.hit for s in sections for i in s.items if i.hit is not None]
    if not any(h.source is MemorySource.FACT and h.supersedes for h in hits):
        return list(sections)
    demoted = {h.id: h for h in demote_replaced(hits) if h.replaced_by is not None}
    if not demoted:
        return list(sections)
    current = {h.id: h.text for h in hits}
    out = []
    for section in sections:
        items = []
        for item in section.items:
            new = None if item.hit is None else demoted.get(item.hit.id)
            if new is not None and new.replaced_by in current:
                note = REPLACED_NOTE.format(current=current[new.replaced_by])
                item = ContextItem(text=f"{item.text} {note}", hit=new)
            items.append(item)
        out.append(section.model_copy(update={"items": tuple(items)}))
    return out
