"""Dedup with a judge: what a model asked about the restatements ``learn`` kept apart adds.

``memory-kernel eval dedup --data FILE --judge openai:<model>@<base_url>`` learns each pair
as the plain suite does (``a``, then ``b``, in an agent of its own), then consolidates every
agent whose pair ``learn`` did not merge, with a :class:`~memory_kernel.judges.ChatJudge` on
that endpoint: the nightly run's candidate search and rules, and the judge asked about the
ambiguous merges, the restatement band included (``consolidation.judge_restatement_
probability``). A pair counts as merged when either step merged it. The report adds how
many pairs the judge was asked about, its calls, and the answers the rules took back
(``judge_fallbacks``: unreadable, or a merge across a changed value or a flipped meaning).
The key is read from ``MEMORY_KERNEL_JUDGE_API_KEY``, else ``OPENAI_API_KEY``.
"""

from __future__ import annotations

from collections.abc import Sequence

from memory_kernel.config import MemoryKernelConfig
from memory_kernel.errors import ConfigError
from memory_kernel.eval.dedup import Pair, learn_pairs, merged, pair_agent
from memory_kernel.eval.kernel_api import LearnOutcome
from memory_kernel.eval.nightly import JudgeLog, judge_opened
from memory_kernel.eval.store import eval_kernel
from memory_kernel.judges.base import Judge
from memory_kernel.models.consolidation import AgentRunStatus, ConsolidationAction
from memory_kernel.protocols import Embedder

__all__ = ["JUDGED_NOTE", "decide_judged"]

JUDGED_NOTE = (
    "with a judge: each pair learn kept apart was consolidated with it; merged = by learn "
    "or by consolidation"
)


async def decide_judged(
    pairs: Sequence[Pair], embedder: Embedder, judge: str | Judge, *,
    config: MemoryKernelConfig | None = None,
) -> tuple[list[LearnOutcome], list[bool], JudgeLog]:  # fmt: skip
    """The outcomes of the b's, which pairs ended merged, and what the judge was asked
    (``judge``: ``openai:<model>@<base_url>``, or a judge object)."""
    async with (
        judge_opened(judge) as chosen,
        eval_kernel(embedder, config=config, judge=chosen) as kernel,
    ):
        outcomes = await learn_pairs(kernel, pairs, embedder)
        merges = merged(outcomes)
        log = JudgeLog(["merged_by_learn", "merged_by_consolidation"])
        log.add("merged_by_learn", sum(merges))
        for n, was_merged in enumerate(list(merges)):
            if was_merged:
                continue
            (run,) = (await kernel.consolidate(pair_agent(n))).agents
            if run.status is not AgentRunStatus.DONE:
                raise ConfigError(f"consolidating pair {pairs[n].id} failed: {run.error}")
            merges[n] = run.counts.get(ConsolidationAction.MERGED, 0) > 0
            log.add("merged_by_consolidation", merges[n])
            log.record(run)
    return outcomes, merges, log
