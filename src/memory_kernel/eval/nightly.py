"""The nightly runs of an evaluation with a judge: the judge named on the command line
opened for the run, and an agent consolidated again until a run has nothing more for the
judge to read (each run asks ``judge_max_items`` at most)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager

from memory_kernel.errors import ConfigError
from memory_kernel.eval._metrics import Metrics
from memory_kernel.eval.kernel_api import MemoryKernel
from memory_kernel.judges.base import Judge
from memory_kernel.models.consolidation import AgentRunStatus, ConsolidationAction

__all__ = ["ASKED", "consolidate_judged", "judge_opened"]

#: What every judged evaluation reports of its judge.
ASKED = ("judge_questions", "judge_calls", "judge_fallbacks")
_RUNS = 1000


@asynccontextmanager
async def judge_opened(judge: str | Judge | None) -> AsyncIterator[Judge | None]:
    """``judge`` as given, or, for ``openai:<model>@<base_url>``, a ``ChatJudge`` on that
    endpoint (``eval.embedders.judge_from_name``), closed after the block."""
    if not isinstance(judge, str):
        yield judge
        return
    from memory_kernel.eval.embedders import judge_from_name

    async with judge_from_name(judge) as chat:
        yield chat


async def consolidate_judged(
    kernel: MemoryKernel,
    agent: str,
    asked: Metrics,
    counted: Mapping[str, ConsolidationAction] | None = None,
) -> list[str]:
    """Consolidate ``agent`` run after run until no question of a run got an answer (none
    left, or a judge that only fails: its questions would come back every run). ``asked``
    adds up :data:`ASKED` and, per key of ``counted``, that action's count. Returns the
    runs' errors, each once (a judge that failed, timed out or missed a check question)."""
    errors: dict[str, None] = {}
    for _ in range(_RUNS):
        (run,) = (await kernel.consolidate(agent)).agents
        if run.status is not AgentRunStatus.DONE:
            raise ConfigError(f"consolidating {agent} failed: {run.error}")
        if run.error:
            errors.setdefault(run.error)
        fallbacks = run.counts.get(ConsolidationAction.JUDGE_FALLBACK, 0)
        asked["judge_questions"] = asked.get("judge_questions", 0) + run.ambiguous
        asked["judge_calls"] = asked.get("judge_calls", 0) + run.judge_calls
        asked["judge_fallbacks"] = asked.get("judge_fallbacks", 0) + fallbacks
        for key, action in (counted or {}).items():
            asked[key] = asked.get(key, 0) + run.counts.get(action, 0)
        if run.ambiguous <= fallbacks:
            break
    return list(errors)
