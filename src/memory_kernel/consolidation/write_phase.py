"""Writing the decided units (a batch of whole units per locked transaction) and
deprecating what fell below the threshold."""

from __future__ import annotations

import dataclasses
import uuid

from memory_kernel.consolidation import repository as repo
from memory_kernel.consolidation.apply import MergeUnit, Unit, apply_units
from memory_kernel.consolidation.audit import insert_events
from memory_kernel.consolidation.context import RunContext
from memory_kernel.errors import EmbedderError
from memory_kernel.models.consolidation import ConsolidationAction as Action
from memory_kernel.models.consolidation import ConsolidationPhase as Phase
from memory_kernel.models.enums import DecidedBy, EventKind, MemoryKind
from memory_kernel.storage.events import Event

__all__ = ["apply_all", "deprecate_all"]


async def apply_all(ctx: RunContext, units: list[Unit]) -> None:
    ctx.report(Phase.APPLY, total=len(units))
    units = await _embed_new_contents(ctx, units)
    size = ctx.cfg.batch_size
    for start in range(0, len(units), size):
        async with ctx.locked() as conn:
            counts, events, _ = await apply_units(
                conn, ctx.agent_id, units[start : start + size], ctx.now
            )
            await insert_events(conn, events)
        ctx.counts.update(counts)
        ctx.report(Phase.APPLY, done=min(start + size, len(units)), total=len(units))


async def _embed_new_contents(ctx: RunContext, units: list[Unit]) -> list[Unit]:
    """Vectors for contents a merge rewrote; without the embedder they wait as pending."""
    rewritten = [u for u in units if isinstance(u, MergeUnit) and u.new_content]
    if not rewritten:
        return units
    try:
        vectors = await ctx.rt.embed([str(u.new_content) for u in rewritten])
    except EmbedderError as exc:
        ctx.errors.append(f"merged contents left pending: {exc}")
        return units
    by_unit = {id(u): v for u, v in zip(rewritten, vectors, strict=True)}
    return [
        dataclasses.replace(u, new_vector=by_unit[id(u)]) if id(u) in by_unit else u for u in units
    ]


async def deprecate_all(ctx: RunContext) -> None:
    """One scan for the candidates, then guarded set-based updates in locked batches (a
    fact a concurrent ``learn`` reinforced meanwhile is left alone)."""
    ctx.report(Phase.DEPRECATE)
    below = ctx.cfg.deprecate_below
    async with ctx.rt.db.connection() as conn:
        ids = await repo.below_confidence(conn, ctx.agent_id, below)
    size = ctx.cfg.batch_size
    for start in range(0, len(ids), size):
        chunk = ids[start : start + size]
        async with ctx.locked() as conn:
            done = await repo.deprecate(conn, ctx.agent_id, chunk, below, ctx.now)
            await insert_events(conn, [_deprecated(ctx, i, c) for i, c in done])
        ctx.counts[Action.DEPRECATED] += len(done)


def _deprecated(ctx: RunContext, fact_id: uuid.UUID, confidence: float) -> Event:
    return Event(
        agent_id=ctx.agent_id, kind=MemoryKind.FACT, memory_id=fact_id,
        event=EventKind.DEPRECATED, decided_by=DecidedBy.RULE, at=ctx.now,
        reason=f"confidence {confidence:.3f} below {ctx.cfg.deprecate_below}",
        score=confidence,
    )  # fmt: skip
