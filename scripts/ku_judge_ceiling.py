"""How far the consolidation judge's update band could retire stale values: a ceiling.

    MEMORY_KERNEL_EVAL_DSN=... python scripts/ku_judge_ceiling.py FILE [FILE ...] \\
        [--band 0.5|off] [--shared] [--sealed] [--embedder hybrid|st|…]

Each knowledge-update file (``{"id", "topic", "old_fact", "new_fact", "label"}``, updates
and look-alikes) is learned as ``eval ku`` learns it (every old fact, a day later every new
one; ``--shared``: all in one agent, else each pair in an agent of its own), then each agent
is consolidated, run after run while the judge is called, with a judge that answers from the
gold labels, a perfect model: "supersede" (the newer wins) for an update pair, "keep both"
for anything else (``ConsolidationConfig.judge_update_probability``; ``off``: the band off,
the rules' conflicts still asked). It prints the older facts of updates still current
before and after, the older facts of look-alikes (admitted) no longer current, the newer
facts retired, and the questions (about an update pair, and in all). The figures are what no
real judge can beat; they are not a measurement of any model. ``--sealed`` prints totals
over the files only (for sets kept blind).
"""

from __future__ import annotations

import argparse
import asyncio
import uuid
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from memory_kernel.config import MemoryKernelConfig
from memory_kernel.consolidation.checks import check_answer
from memory_kernel.consolidation.judging import ConflictRequest
from memory_kernel.eval.embedders import EMBEDDER_HELP, embedder_from_name
from memory_kernel.eval.ku import KuPair, learn_pairs, load_pairs
from memory_kernel.eval.nightly import JudgeLog, consolidate_judged
from memory_kernel.eval.store import eval_kernel, eval_server
from memory_kernel.judges.base import AdmissionRequest, Judge
from memory_kernel.models.enums import FactStatus
from memory_kernel.protocols import Embedder
from memory_kernel.testing import FrozenClock


class LabelJudge:
    """Supersedes an update pair's older fact by its newer one; keeps anything else."""

    name = "labels"

    def __init__(self) -> None:
        self.newer: dict[uuid.UUID, uuid.UUID] = {}  # an update's old fact -> its new one
        self.asked = Counter[str]()

    async def admit(self, requests: Sequence[AdmissionRequest]) -> list[dict[str, Any]]:
        return [{"decision": "ADD", "reason": "every episode"} for _ in requests]

    async def resolve(self, requests: Sequence[ConflictRequest]) -> list[dict[str, Any]]:
        answers = []
        for request in requests:
            ids = {f.id for f in request.facts}
            check = check_answer(ids)  # a run's check question
            if check is not None:
                answers.append(check)
                continue
            # A supersede retires every other fact asked about: only for the pair itself.
            new = next((n for o, n in self.newer.items() if {o, n} == ids), None)
            self.asked["about an update pair" if new else "about other facts"] += 1
            if new is None:
                answers.append({"decision": "keep_both", "reason": "gold label"})
            else:
                answers.append({"decision": "supersede", "winner_id": str(new), "reason": "gold"})
        return answers


async def _one(
    pairs: Sequence[KuPair], band: str, shared: bool, embedder: Embedder
) -> Counter[str]:
    judge, clock = LabelJudge(), FrozenClock()
    section: dict[str, object] = {"judge_max_calls": 100}
    if band == "off":
        section["judge_update_probability"] = None
    elif band:
        section["judge_update_probability"] = float(band)
    config = MemoryKernelConfig.from_mapping({"consolidation": section})
    agents = ["shared" if shared else f"pair-{i}" for i in range(len(pairs))]
    async with eval_kernel(
        embedder, clock=clock, judge=cast(Judge, judge), config=config
    ) as kernel:
        facts = kernel.heart.facts
        learned = await learn_pairs(kernel, clock, agents, pairs)  # as ``eval ku`` learns them
        olds, news = [old for old, _ in learned], [new for _, new in learned]
        for pair, old, new in zip(pairs, olds, news, strict=True):
            if pair.label == "update":
                judge.newer[old.fact.id] = new.fact.id

        async def status(agent: str, fact_id: uuid.UUID) -> FactStatus:
            return (await facts.get(fact_id, agent_id=agent)).status

        before = [await status(a, o.fact.id) for a, o in zip(agents, olds, strict=True)]
        for agent in dict.fromkeys(agents):
            await consolidate_judged(kernel, agent, JudgeLog())
        figures = Counter[str](judge.asked)
        for agent, pair, old, new, was in zip(agents, pairs, olds, news, before, strict=True):
            now = await status(agent, old.fact.id)
            if pair.label == "update":
                figures["updates"] += 1
                figures["stale current before"] += was is FactStatus.ACTIVE
                figures["stale current after"] += now is FactStatus.ACTIVE
            elif was is FactStatus.ACTIVE:
                figures["look-alikes admitted"] += 1
                figures["look-alikes retired"] += now is not FactStatus.ACTIVE
            newer = await status(agent, new.fact.id)
            figures["newer facts retired"] += newer not in (FactStatus.ACTIVE, FactStatus.REJECTED)
    return figures


_SHOWN = (
    "updates", "stale current before", "stale current after", "look-alikes admitted",
    "look-alikes retired", "newer facts retired", "about an update pair", "about other facts",
)  # fmt: skip


def _line(name: str, figures: Counter[str]) -> str:
    return f"{name}: " + ", ".join(f"{key} {figures[key]}" for key in _SHOWN)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--band", default="", help="the update band, or off (default: config)")
    parser.add_argument("--shared", action="store_true", help="every pair in one agent")
    parser.add_argument("--sealed", action="store_true", help="totals over the files only")
    parser.add_argument("--embedder", default="hybrid", help=EMBEDDER_HELP)
    args = parser.parse_args()
    total = Counter[str]()
    embedder = embedder_from_name(args.embedder)
    async with eval_server():
        for path in args.files:
            figures = await _one(load_pairs(path), args.band, args.shared, embedder)
            total.update(figures)
            if not args.sealed:
                print(_line(path.name, figures))
    if args.sealed or len(args.files) > 1:
        print(_line("all files", total))


if __name__ == "__main__":
    asyncio.run(main())
