"""What ``post_turn`` reports of a turn's decision (pure): the decision it recorded, or the
layer (1, 2 or 3) that stopped it and why."""

from __future__ import annotations

from memory_kernel.brain.policy import FinalizeResult
from memory_kernel.brain.stats import Layer
from memory_kernel.models.decisions import Decision
from memory_kernel.models.turns import SkipReason, TurnHandle, TurnResult

__all__ = ["turn_result"]

_LAYER_NUMBER = {
    Layer.NOT_DELIBERATED: 1,
    Layer.INFORMATIONAL: 1,
    Layer.DUPLICATE: 2,
    Layer.QUALITY_GATE: 3,
}
_SKIP = {
    Layer.NOT_DELIBERATED: SkipReason.NOT_DELIBERATED,
    Layer.INFORMATIONAL: SkipReason.INFORMATIONAL,
    Layer.DUPLICATE: SkipReason.DUPLICATE,
    Layer.QUALITY_GATE: SkipReason.QUALITY_GATE,
    Layer.EXPLICIT: SkipReason.EXPLICIT,
}


def turn_result(
    turn: TurnHandle, explicit: list[Decision], result: FinalizeResult | None
) -> TurnResult:
    """What ``post_turn`` returns for the turn's deliberation ``result`` (``None``: it had
    none) and the decisions the agent recorded itself."""
    reason: str | None
    if result is None:
        layer = Layer.NOT_DELIBERATED if turn.duplicate_of is None else Layer.DUPLICATE
        reason = f"frame: {turn.frame}" if turn.duplicate_of is None else "at start"
    elif result.decision is not None:
        return TurnResult(episode_id=turn.episode_id, decision=result.decision, explicit=explicit)
    else:
        layer, reason = result.layer or Layer.QUALITY_GATE, result.reason
    return TurnResult(
        episode_id=turn.episode_id,
        explicit=explicit,
        skipped=_SKIP[layer],
        layer=_LAYER_NUMBER.get(layer),
        reason=reason,
    )
