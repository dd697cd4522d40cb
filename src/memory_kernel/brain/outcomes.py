"""Recording how a decision turned out: the flow of ``kernel.brain.record_outcome``.

One unit of work (it joins the caller's, e.g. ``post_turn``'s): the decision's row lock, the
rule (``policy.outcome_values``), the new ``outcome`` and a ``decision_outcome`` event whose
reason is the caller's note. A decision with an outcome is a closed attempt: layer 2 no
longer compares new decisions with it (``store.recent_for_dedup``), so "Deploy service to
production" can succeed once and fail the next time, and recall shows both.
"""

from __future__ import annotations

from memory_kernel.brain import policy, store
from memory_kernel.models.decisions import Decision, OutcomeReport
from memory_kernel.models.enums import DecidedBy, EventKind, MemoryKind
from memory_kernel.runtime import Runtime
from memory_kernel.storage.events import Event, write_events

__all__ = ["record_outcome"]


async def record_outcome(rt: Runtime, report: OutcomeReport, *, agent_id: str) -> Decision:
    """Store ``report`` on the agent's decision; the decision as stored afterwards."""
    async with rt.db.transaction() as conn:
        current, _ = await store.get_for_update(
            conn, agent_id=agent_id, decision_id=report.decision_id
        )
        if not policy.outcome_changes(current, report):
            return current
        now = rt.clock.now()
        decision = await store.update(
            conn, current, {"outcome": report.outcome.value, "updated_at": now}
        )
        event = Event(
            agent_id=agent_id,
            kind=MemoryKind.DECISION,
            memory_id=decision.id,
            event=EventKind.DECISION_OUTCOME,
            decided_by=DecidedBy.CALLER,
            at=now,
            reason=report.note,
            details={
                "outcome": report.outcome.value,
                "from": None if current.outcome is None else current.outcome.value,
            },
        )
        await write_events(conn, [event])
    return decision
