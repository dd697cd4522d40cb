"""Evidence and decay: one sequential read of the agent's confidences, then the changes
written in small locked batches (guarded, so a concurrent ``learn`` wins)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from memory_kernel.consolidation import repository as repo
from memory_kernel.consolidation.audit import insert_events
from memory_kernel.consolidation.context import RunContext
from memory_kernel.consolidation.policy import (
    ConfidenceChange,
    ConfidenceRules,
    Evidence,
    plan_confidence,
)
from memory_kernel.models.consolidation import ConsolidationAction as Action
from memory_kernel.models.consolidation import ConsolidationPhase as Phase
from memory_kernel.models.enums import DecidedBy, EventKind, MemoryKind
from memory_kernel.storage.events import Event

__all__ = ["confidence_rules", "run_confidence"]

_ZERO = uuid.UUID(int=0)
# Rows per fetch of the sequential read.
_STREAM_CHUNK = 5000


def confidence_rules(ctx: RunContext) -> ConfidenceRules:
    context, cfg = ctx.rt.config.context, ctx.cfg
    tiers = {context.passive_min_confidence, context.active_min_confidence, cfg.deprecate_below}
    return ConfidenceRules(
        decay_per_day=cfg.decay_per_day,
        min_change=cfg.decay_min_change,
        deprecate_below=cfg.deprecate_below,
        tiers=tuple(sorted(tiers)),
        steady=frozenset(cfg.steady_categories),
    )


async def _evidence(ctx: RunContext) -> dict[uuid.UUID, Evidence]:
    """Supporting episodes per fact: each completed episode searches its nearest facts
    (episodes are far fewer than facts, and most are old news to every fact)."""
    found: dict[uuid.UUID, list[tuple[uuid.UUID, datetime]]] = {}
    async with ctx.rt.db.connection() as conn:
        since = await repo.oldest_evidence(conn, ctx.agent_id)
        if since is None:
            return {}
        await repo.set_ef_search(conn, ctx.cfg.evidence_ef_search)
        after = _ZERO
        while ids := await repo.episode_page(
            conn, ctx.agent_id, since=since, after=after, limit=ctx.cfg.batch_size
        ):
            for fact_id, episode_id, ended in await repo.evidence_pairs(
                conn, ctx.agent_id, ids, k=ctx.cfg.evidence_neighbours,
                min_similarity=ctx.cfg.evidence_similarity,
            ):  # fmt: skip
                found.setdefault(fact_id, []).append((episode_id, ended))
            after = ids[-1]
    return {f: _evidence_of(eps) for f, eps in found.items()}


def _evidence_of(episodes: list[tuple[uuid.UUID, datetime]]) -> Evidence:
    ordered = sorted(episodes, key=lambda e: e[1])
    return Evidence(tuple(e for e, _ in ordered), ordered[-1][1])


async def _plan(
    ctx: RunContext, evidence: dict[uuid.UUID, Evidence], rules: ConfidenceRules
) -> list[tuple[ConfidenceChange, datetime]]:
    """Every change to write, with the ``updated_at`` it was planned from (the guard)."""
    changes: list[tuple[ConfidenceChange, datetime]] = []
    async with ctx.rt.db.connection() as conn:
        async for page in repo.stream_confidence(conn, ctx.agent_id, chunk=_STREAM_CHUNK):
            planned = [(plan_confidence(s, evidence.get(s.id), ctx.now, rules), s) for s in page]
            found = [(c, s.updated_at) for c, s in planned if c is not None]
            changes += found
            ctx.scanned += len(page)
            ctx.report(Phase.CONFIDENCE, done=ctx.scanned)
    changes.sort(key=lambda cs: cs[0].id.bytes)  # a fixed lock order across workers
    return changes


async def run_confidence(ctx: RunContext) -> None:
    ctx.report(Phase.CONFIDENCE)
    rules = confidence_rules(ctx)
    changes = await _plan(ctx, await _evidence(ctx), rules)
    size = ctx.cfg.batch_size
    for start in range(0, len(changes), size):
        chunk = changes[start : start + size]
        async with ctx.locked() as conn:
            written = await repo.write_confidence(conn, ctx.agent_id, chunk, ctx.now)
            done = [c for c, _ in chunk if c.id in written]
            await insert_events(conn, [_event(ctx, c) for c in done])
        _count_changes(ctx, done)


def _count_changes(ctx: RunContext, changes: Sequence[ConfidenceChange]) -> None:
    for change in changes:
        ctx.counts[Action.REINFORCED if change.evidence else Action.DECAYED] += 1


def _event(ctx: RunContext, change: ConfidenceChange) -> Event:
    details: dict[str, Any] = {"before": change.before, "after": change.after,
                               "decay_days": round(change.decay_days, 4)}  # fmt: skip
    if change.evidence:
        details["episodes"] = [str(e) for e in change.evidence]
    return Event(
        agent_id=ctx.agent_id, kind=MemoryKind.FACT, memory_id=change.id,
        event=EventKind.REINFORCED if change.evidence else EventKind.CONFIDENCE_CHANGED,
        decided_by=DecidedBy.RULE, at=ctx.now, reason=change.reason, score=change.after,
        details=details,
    )  # fmt: skip
