"""The nightly runs of an evaluation with a judge: the judge named on the command line
opened for the run, and an agent consolidated again until a run has nothing more for the
judge to read (each run asks ``judge_max_items`` at most)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager

from memory_kernel.errors import ConfigError
from memory_kernel.eval._metrics import Metrics
from memory_kernel.eval.kernel_api import MemoryKernel
from memory_kernel.judges.base import Judge
from memory_kernel.models.consolidation import (
    AgentConsolidation,
    AgentRunStatus,
    ConsolidationAction,
)

__all__ = ["JudgeLog", "consolidate_judged", "judge_opened"]

#: What every judged evaluation reports of its judge.
_ASKED = ("judge_questions", "judge_calls", "judge_fallbacks")
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


class JudgeLog:
    """What a judge was asked over an evaluation's nightly runs (``counts``: its questions,
    calls and fallbacks, and any ``keys``) and the runs' errors, each once (a judge that
    failed, timed out or missed a check question), for the report."""

    def __init__(self, keys: Iterable[str] = ()) -> None:
        self.counts: Metrics = dict.fromkeys([*_ASKED, *keys], 0)
        self.errors: dict[str, None] = {}

    def add(self, key: str, n: float) -> None:
        self.counts[key] = self.counts.get(key, 0) + n

    def record(self, run: AgentConsolidation) -> None:
        """The run's questions, calls and fallbacks, and its error."""
        self.add("judge_questions", run.ambiguous)
        self.add("judge_calls", run.judge_calls)
        self.add("judge_fallbacks", run.counts.get(ConsolidationAction.JUDGE_FALLBACK, 0))
        if run.error:
            self.errors.setdefault(run.error)

    def notes(self) -> list[str]:
        return [f"a nightly run: {error}" for error in self.errors]


async def consolidate_judged(
    kernel: MemoryKernel,
    agent: str,
    log: JudgeLog,
    counted: Mapping[str, ConsolidationAction] | None = None,
) -> None:
    """Consolidate ``agent`` run after run until no question of a run got an answer (none
    left, or a judge that only fails: its questions would come back every run), each run
    recorded in ``log`` with, per key of ``counted``, that action's count."""
    for _ in range(_RUNS):
        (run,) = (await kernel.consolidate(agent)).agents
        if run.status is not AgentRunStatus.DONE:
            raise ConfigError(f"consolidating {agent} failed: {run.error}")
        log.record(run)
        for key, action in (counted or {}).items():
            log.add(key, run.counts.get(action, 0))
        if run.ambiguous <= run.counts.get(ConsolidationAction.JUDGE_FALLBACK, 0):
            return
