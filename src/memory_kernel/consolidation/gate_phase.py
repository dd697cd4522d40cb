"""Layer 1's uncertain band read again by the judge (the rules: ``brain.review``).

The deliberations whose layer-1 probability lies in ``judge_decision_band`` and that no
judge has read are asked about in one batched call (``judge_max_items``, oldest first; the
rest wait for the next run). Each answer is applied in a unit of its own, on the row as it
is then: a row changed since it was read (an outcome, an erasure) is left for the next run.
A dry run counts the band as ``ambiguous`` and never calls the judge. With
``judge_checks`` the batch opens with ``brain.review.GATE_CHECKS``: a judge that fails one
has none of its answers applied in that run.
"""

from __future__ import annotations

from collections.abc import Callable

from memory_kernel.brain import Brain, policy, review, store
from memory_kernel.brain.review import Change, GateReviewRequest, GateReviewVerdict
from memory_kernel.brain.stats import Layer
from memory_kernel.cognitive.draft import draft_decision
from memory_kernel.consolidation.context import RunContext
from memory_kernel.consolidation.judging import Check, Question, ask, can_ask
from memory_kernel.errors import NotFoundError
from memory_kernel.models.consolidation import ConsolidationAction as Action
from memory_kernel.models.consolidation import ConsolidationPhase as Phase
from memory_kernel.models.enums import DecidedBy, EventKind, MemoryKind
from memory_kernel.models.turns import TurnOutcome
from memory_kernel.runtime import Runtime, Vector
from memory_kernel.storage.events import Event, write_events

__all__ = ["GATE_REVIEW", "review_band", "review_gate"]

GATE_REVIEW: Question[GateReviewRequest, GateReviewVerdict] = Question(
    "review_decisions", review.GATE_REVIEW_SYSTEM_PROMPT, review.gate_review_prompt,
    GateReviewVerdict,
)  # fmt: skip


def review_band(rt: Runtime) -> tuple[float, float] | None:
    """The band consolidation reviews: ``None`` without a judge that can answer, or off."""
    cfg = rt.config.consolidation
    band = cfg.judge_decision_band
    if band is None or cfg.judge_max_calls == 0 or not can_ask(rt.judge, GATE_REVIEW):
        return None
    return band


async def review_gate(ctx: RunContext, brain: Brain | None) -> None:
    band = review_band(ctx.rt)
    if brain is None or band is None:
        return
    ctx.report(Phase.JUDGE)
    async with ctx.rt.db.connection() as conn:
        requests = await store.review_candidates(
            conn, agent_id=ctx.agent_id, low=band[0], high=band[1], limit=ctx.cfg.judge_max_items
        )
    ctx.ambiguous += len(requests)  # as the merge phase counts its cases, asked or not
    if ctx.dry_run:  # the judge's to decide in the real run
        return
    judge = ctx.rt.judge
    checks = _checks(ctx.agent_id) if ctx.cfg.judge_checks else []
    answers = await ask(
        judge, GATE_REVIEW, requests, timeout_s=ctx.cfg.judge_timeout_s, checks=checks
    )
    ctx.judge_calls += int(answers.called)
    if answers.error:
        ctx.errors.append(f"decision review: {answers.error}")
    name = str(getattr(judge, "name", type(judge).__name__))
    for request, verdict in zip(requests, answers.verdicts, strict=True):
        if verdict is None:  # asked again next run
            ctx.counts[Action.JUDGE_FALLBACK] += 1
            continue
        done = await _apply(ctx, brain, request, verdict, name)
        ctx.counts.update(done)


def _checks(agent_id: str) -> list[Check[GateReviewRequest, GateReviewVerdict]]:
    def answer_is(want: bool) -> Callable[[GateReviewVerdict], bool]:
        return lambda verdict: verdict.is_decision is want

    return [Check(r, answer_is(want)) for r, want in review.check_requests(agent_id)]


async def _apply(
    ctx: RunContext,
    brain: Brain,
    request: GateReviewRequest,
    verdict: GateReviewVerdict,
    judge: str,
) -> list[Action]:
    """The judge's answer on the row as it is now; the actions it counts."""
    change = review.change(request, verdict)
    marked = review.reviewed(request, verdict, judge)
    draft = await _draft(ctx, request) if change is Change.RESTORE else None
    async with ctx.rt.db.transaction() as conn:
        try:
            current, _ = await store.get_for_update(
                conn, agent_id=ctx.agent_id, decision_id=request.decision_id
            )
        except NotFoundError:  # erased since it was read
            return []
        as_read = current.metadata.get(review.GATE_KEY) == request.gate
        if current.active != request.recorded or not as_read:
            return []
        if change is Change.REJECT:
            await brain.abandon(
                current.id, agent_id=ctx.agent_id, layer=Layer.JUDGE, reason=verdict.reason,
                gate=marked,
            )  # fmt: skip
            return [Action.DECISIONS_REVIEWED, Action.DECISIONS_REJECTED]
        now = ctx.rt.clock.now()
        values = {**policy.gate_marked(current, marked), "updated_at": now}
        if draft is None:  # the judge agrees with layer 1
            await store.update(conn, current, values)
            return [Action.DECISIONS_REVIEWED]
        restored = await store.update(
            conn, current, {**values, "active": True, "rejection_reason": None}
        )
        reason = f"judge: a decision after all: {verdict.reason}"
        await write_events(conn, [Event(
            agent_id=ctx.agent_id, kind=MemoryKind.DECISION, memory_id=restored.id,
            event=EventKind.DECISION_STARTED, decided_by=DecidedBy.JUDGE, at=now, reason=reason,
        )])  # fmt: skip
        # Layers 3 and 2 as for any deliberation: the quality gate, the session's dedup.
        description, reasoning, vector = draft
        result = await brain.conclude(
            current.id, agent_id=ctx.agent_id, description=description, embedding=vector,
            reasoning=reasoning,
        )  # fmt: skip
    if result.decision is None:
        return [Action.DECISIONS_REVIEWED]
    return [Action.DECISIONS_REVIEWED, Action.DECISIONS_RESTORED]


async def _draft(
    ctx: RunContext, request: GateReviewRequest
) -> tuple[str, str | None, Vector | None]:
    """The decision of a response to restore, drafted and embedded before the unit, as
    ``post_turn`` drafts one."""
    description, reasoning = draft_decision(TurnOutcome(response_text=request.response))
    return description, reasoning, (await ctx.rt.embed_or_none([description]))[0]
