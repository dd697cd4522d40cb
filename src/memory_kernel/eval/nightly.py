"""The nightly runs of an evaluation with a judge: an agent consolidated again until a run
has nothing more for the judge to read (each run asks ``judge_max_items`` at most)."""

from __future__ import annotations

from collections.abc import Mapping

from memory_kernel.errors import ConfigError
from memory_kernel.eval._metrics import Metrics
from memory_kernel.eval.kernel_api import MemoryKernel
from memory_kernel.models.consolidation import AgentRunStatus, ConsolidationAction

__all__ = ["ASKED", "consolidate_judged"]

#: What every judged evaluation reports of its judge.
ASKED = ("judge_questions", "judge_calls", "judge_fallbacks")
_RUNS = 1000


async def consolidate_judged(
    kernel: MemoryKernel,
    agent: str,
    asked: Metrics,
    counted: Mapping[str, ConsolidationAction] | None = None,
) -> None:
    """Consolidate ``agent`` run after run until no question of a run got an answer (none
    left, or a judge that only fails: its questions would come back every run). ``asked``
    adds up :data:`ASKED` and, per key of ``counted``, that action's count."""
    for _ in range(_RUNS):
        (run,) = (await kernel.consolidate(agent)).agents
        if run.status is not AgentRunStatus.DONE:
            raise ConfigError(f"consolidating {agent} failed: {run.error}")
        fallbacks = run.counts.get(ConsolidationAction.JUDGE_FALLBACK, 0)
        asked["judge_questions"] = asked.get("judge_questions", 0) + run.ambiguous
        asked["judge_calls"] = asked.get("judge_calls", 0) + run.judge_calls
        asked["judge_fallbacks"] = asked.get("judge_fallbacks", 0) + fallbacks
        for key, action in (counted or {}).items():
            asked[key] = asked.get(key, 0) + run.counts.get(action, 0)
        if run.ambiguous <= fallbacks:
            return
