"""Counters of the decision gate: what each layer rejected and why.

One collector per kernel, shared by the Brain (layers 2 and 3) and the cognitive layer
(frames and layer 1). Counts are only added after the transaction that made the change
committed, so a rolled-back turn counts nothing. Every rejection is also logged as one
structured line (``extra`` carries layer, reason and ids).
"""

from __future__ import annotations

import logging
import uuid
from collections import Counter
from enum import StrEnum
from typing import TYPE_CHECKING

from memory_kernel.models.decisions import GateStats, LayerStats

if TYPE_CHECKING:
    from memory_kernel.brain.policy import FinalizeResult, StartResult

__all__ = ["GateCounters", "Layer"]

_log = logging.getLogger("memory_kernel.decisions")


class Layer(StrEnum):
    NOT_DELIBERATED = "not_deliberated"  # the frame does not auto-record
    INFORMATIONAL = "informational"  # layer 1
    DUPLICATE = "duplicate"  # layer 2
    QUALITY_GATE = "quality_gate"  # layer 3
    JUDGE = "judge"  # a judge's second reading of layer 1's uncertain band (brain.review)
    EXPLICIT = "explicit"  # not a rejection: the agent recorded the decision itself


class GateCounters:
    """Mutable counters; ``snapshot()`` returns a frozen :class:`GateStats`."""

    def __init__(self) -> None:
        self.turns = 0
        self.started = 0
        self.recorded = 0
        self.recorded_explicit = 0
        self._reasons: dict[Layer, Counter[str]] = {layer: Counter() for layer in Layer}

    def reject(
        self,
        layer: Layer,
        reason: str,
        *,
        agent_id: str,
        session_id: str,
        decision_id: uuid.UUID | None = None,
        related_id: uuid.UUID | None = None,
    ) -> None:
        self._reasons[layer][reason] += 1
        # A non-deliberating frame is the normal case of most turns: not worth an info line.
        level = logging.DEBUG if layer is Layer.NOT_DELIBERATED else logging.INFO
        _log.log(
            level,
            "decision skipped",
            extra={
                "layer": layer.value,
                "reason": reason,
                "agent_id": agent_id,
                "session_id": session_id,
                "decision_id": None if decision_id is None else str(decision_id),
                "related_id": None if related_id is None else str(related_id),
            },
        )

    def observe_start(self, result: StartResult, *, agent_id: str, session_id: str) -> None:
        """Count a start that committed: a deliberation, or a duplicate layer 2 refused."""
        if result.decision_id is not None:
            self.started += 1
            return
        self.reject(
            Layer.DUPLICATE,
            str(result.dedup.method),
            agent_id=agent_id,
            session_id=session_id,
            related_id=result.dedup.duplicate_of,
        )

    def observe_finalize(
        self, result: FinalizeResult, *, agent_id: str, decision_id: uuid.UUID | None = None
    ) -> None:
        """Count a finalize that committed: a recorded decision, or the layer that refused."""
        if result.decision is not None:
            self.recorded += int(result.decision.finalized)
        elif result.layer is not None:
            self.reject(
                result.layer,
                result.reason or "unknown",
                agent_id=agent_id,
                session_id=result.session_id,
                decision_id=decision_id,
                related_id=result.related_id,
            )

    def snapshot(self) -> GateStats:
        def layer(which: Layer) -> LayerStats:
            reasons = self._reasons[which]
            return LayerStats(rejected=sum(reasons.values()), reasons=dict(sorted(reasons.items())))

        return GateStats(
            turns=self.turns,
            deliberations_started=self.started,
            not_deliberated=layer(Layer.NOT_DELIBERATED),
            informational=layer(Layer.INFORMATIONAL),
            duplicate=layer(Layer.DUPLICATE),
            quality_gate=layer(Layer.QUALITY_GATE),
            recorded=self.recorded,
            recorded_explicit=self.recorded_explicit,
        )
