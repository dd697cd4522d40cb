"""Candidate pairs, the merge/contradiction plan and the batched judge: everything that
decides, nothing that writes. Returns the write units for ``write_phase``."""

from __future__ import annotations

import asyncio
import uuid

import numpy as np

from memory_kernel.consolidation import repository as repo
from memory_kernel.consolidation.apply import Unit
from memory_kernel.consolidation.candidates import IvfParams, VectorStore, candidate_pairs
from memory_kernel.consolidation.checks import fact_checks
from memory_kernel.consolidation.context import RunContext
from memory_kernel.consolidation.judging import ask_judge, can_judge
from memory_kernel.consolidation.plans import FactView, MergeRules, Pair, PairPlan, plan_pairs
from memory_kernel.consolidation.resolve import (
    Case,
    cap_cases,
    judge_cases,
    rule_units,
    verdict_units,
)
from memory_kernel.models.consolidation import ConsolidationAction as Action
from memory_kernel.models.consolidation import ConsolidationPhase as Phase
from memory_kernel.models.enums import DecidedBy, EventKind, MemoryKind
from memory_kernel.storage.events import Event, write_events

__all__ = ["decide"]

Penalised = frozenset[tuple[uuid.UUID, uuid.UUID]]
# Rows per fetch of the sequential vector read (~7.7 MB of float32 vectors at 384 dims).
_STREAM_CHUNK = 5000


async def decide(ctx: RunContext) -> list[Unit]:
    """The units the rules decide, then the judge's (or the rule fallback)."""
    plan, views, penalised = await _plan(ctx)
    units = rule_units(plan)
    units += await _judge(ctx, plan, views, penalised)
    return units


async def _not_judged(ctx: RunContext, *kinds: list[Case]) -> tuple[list[Case], ...]:
    """Each kind's cases no judge has kept apart yet: a "keep both" is the answer for good."""
    if not any(kinds):
        return kinds
    async with ctx.rt.db.connection() as conn:
        judged = await repo.judged_apart(conn, ctx.agent_id)
    return tuple([c for c in cases if frozenset(c.ids) not in judged] for cases in kinds)


async def _plan(ctx: RunContext) -> tuple[PairPlan, dict[uuid.UUID, FactView], Penalised]:
    ctx.report(Phase.CANDIDATES)
    found = {pair.key: pair for pair in await _nearest_pairs(ctx)}
    async with ctx.rt.db.connection() as conn:
        for pair in await repo.linked_pairs(conn, ctx.agent_id):
            found.setdefault(pair.key, pair)
        penalised = await repo.penalised_pairs(conn, ctx.agent_id)
        ids = list({i for key in found for i in key})
        views = await repo.fact_views(conn, ctx.agent_id, ids)
    ctx.pairs = len(found)
    pairs = [p for p in found.values() if p.a in views and p.b in views]
    cfg = ctx.cfg
    rules = MergeRules(
        merge_similarity=cfg.merge_similarity,
        merge_min_confidence=cfg.merge_min_confidence,
        ambiguous_similarity=cfg.ambiguous_similarity,
        contradiction_similarity=cfg.contradiction_similarity,
        restatement_probability=_restatement_band(ctx),
        update_probability=_update_band(ctx),
    )
    plan = plan_pairs(pairs, views, rules, ctx.facts.thresholds(), penalised=penalised)
    return plan, views, penalised


async def _nearest_pairs(ctx: RunContext) -> list[Pair]:
    """Stream the agent's vectors (one sequential pass) and search neighbours in memory."""
    async with ctx.rt.db.connection() as conn:
        capacity = await repo.searchable_count(conn, ctx.agent_id)
        store = VectorStore(ctx.rt.embedder.dim, capacity)
        async for ids, vectors in repo.stream_vectors(conn, ctx.agent_id, chunk=_STREAM_CHUNK):
            store.add(ids, np.stack(vectors).astype(np.float32))
            ctx.report(Phase.CANDIDATES, done=len(store.ids))
    heart = ctx.rt.config.heart
    floor = min(heart.fact_contradiction_similarity, ctx.cfg.ambiguous_similarity)
    if _restatement_band(ctx) is not None or _update_band(ctx) is not None:
        # Paraphrases, and a slot's old and new values, sit far below the "same thing"
        # cosines in a lexical embedding.
        floor = min(floor, heart.fact_dedup_similarity)
    params = IvfParams(
        k=ctx.cfg.neighbours,
        floor=floor,
        cell_size=ctx.cfg.candidate_cell_size,
        probes=ctx.cfg.candidate_probes,
    )
    # CPU-bound numpy work: off the event loop, so other agents' runs and the host go on.
    return await asyncio.to_thread(_search, store, params)


def _restatement_band(ctx: RunContext) -> float | None:
    """The restatement band (``plans``), asked about only when a judge can answer."""
    return ctx.cfg.judge_restatement_probability if can_judge(ctx.rt.judge) else None


def _update_band(ctx: RunContext) -> float | None:
    """The update band (``plans``), asked about only when a judge can answer."""
    return ctx.cfg.judge_update_probability if can_judge(ctx.rt.judge) else None


def _search(store: VectorStore, params: IvfParams) -> list[Pair]:
    # Heap order changes as rows are updated; id order makes the search (its training
    # sample) depend on the facts alone.
    store.sort_by_id()
    return candidate_pairs(store, params)


async def _judge(
    ctx: RunContext, plan: PairPlan, views: dict[uuid.UUID, FactView], penalised: Penalised
) -> list[Unit]:
    conflicts, merges = judge_cases(plan)
    if can_judge(ctx.rt.judge):
        conflicts, merges = await _not_judged(ctx, conflicts, merges)
    ctx.ambiguous += len(conflicts) + len(merges)
    if ctx.dry_run and can_judge(ctx.rt.judge):
        # A dry run never calls the judge: its cases are reported as ``ambiguous`` only,
        # their outcome is the judge's to decide in the real run.
        return []
    judge = ctx.rt.judge if can_judge(ctx.rt.judge) else None
    units: list[Unit] = []
    calls_left = ctx.cfg.judge_max_calls
    for cases in (conflicts, merges):
        if not cases:
            continue
        if judge is None or calls_left == 0:
            ctx.counts[Action.KEPT_BOTH] += len(cases)
            if judge is not None:
                ctx.counts[Action.JUDGE_FALLBACK] += len(cases)
            continue
        calls_left -= 1
        units += await _ask(ctx, judge, cases, views, penalised)
    return units


async def _ask(
    ctx: RunContext,
    judge: object,
    cases: list[Case],
    views: dict[uuid.UUID, FactView],
    penalised: Penalised,
) -> list[Unit]:
    ctx.report(Phase.JUDGE, total=len(cases))
    asked, overflow = cap_cases(cases, ctx.cfg.judge_max_items)
    requests = [c.request(ctx.agent_id, views) for c in asked]
    checks = fact_checks(cases[0].kind, ctx.agent_id) if ctx.cfg.judge_checks else []
    answers = await ask_judge(judge, requests, timeout_s=ctx.cfg.judge_timeout_s, checks=checks)
    ctx.judge_calls += int(answers.called)
    if answers.error:
        ctx.errors.append(answers.error)
    units: list[Unit] = []
    kept: list[Event] = []
    fallbacks = len(overflow)
    thresholds = ctx.facts.thresholds()
    for case, verdict in zip(asked, answers.verdicts, strict=True):
        decided = None if verdict is None else verdict_units(
            case, verdict, views, thresholds, penalised=penalised
        )  # fmt: skip
        if verdict is None or decided is None:
            fallbacks += 1
        elif not decided:  # kept apart: not asked again (``_not_judged``)
            ctx.counts[Action.KEPT_BOTH] += 1
            kept.append(_kept_apart(ctx, case, verdict.reason))
        units += decided or []
    if kept:
        async with ctx.locked() as conn:
            await write_events(conn, kept)
    # The rule decision for an ambiguous case is to change nothing.
    ctx.counts[Action.JUDGE_FALLBACK] += fallbacks
    ctx.counts[Action.KEPT_BOTH] += fallbacks
    return units


def _kept_apart(ctx: RunContext, case: Case, reason: str) -> Event:
    """The audit row of a judge's "keep both": on the case's first fact, the second as
    ``related_id``, every fact of the case in ``details.members``."""
    return Event(
        agent_id=ctx.agent_id, kind=MemoryKind.FACT, memory_id=case.ids[0],
        event=EventKind.JUDGED_APART, decided_by=DecidedBy.JUDGE, at=ctx.rt.clock.now(),
        reason=reason, related_id=case.ids[1] if len(case.ids) > 1 else None,
        score=case.similarity, details={"kind": case.kind.value,
                                         "members": [str(i) for i in case.ids]},
    )  # fmt: skip
