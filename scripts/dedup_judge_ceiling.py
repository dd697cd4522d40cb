"""How far the consolidation judge's restatement band could take dedup: a ceiling.

    MEMORY_KERNEL_EVAL_DSN=... python scripts/dedup_judge_ceiling.py \\
        ../shared/eval/dev/dedup_pairs/dedup_pairs_authored_dev.jsonl [--embedder hybrid|st|…]

Each pair of a dedup file (``{"id", "a", "b", "label"}``) is learned in an agent of its own,
explicitly as ``eval dedup`` does (``a``, then ``b`` a minute later), then the agent is
consolidated with a judge that answers every question from the gold label, a perfect
model: "merge" for a pair labelled the same, "keep both" otherwise. The figures are what no
real judge can beat with the embedder (the default one unless ``--embedder``) and the shipped
weights, and how many
questions it is asked; they are not a measurement of any model. On the development files
the shipped duplicate weights were fitted on, it is a development figure, not a held-out
one.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memory_kernel.consolidation.judging import ConflictRequest
from memory_kernel.eval.embedders import EMBEDDER_HELP, embedder_from_name
from memory_kernel.eval.store import eval_kernel, eval_server
from memory_kernel.judges.base import AdmissionRequest
from memory_kernel.models.enums import FactStatus
from memory_kernel.models.facts import FactInput, LearnAction
from memory_kernel.protocols import Embedder
from memory_kernel.testing import FrozenClock


class OracleJudge:
    """Answers consolidation questions from the gold labels (``same``: fact id -> label)."""

    name = "oracle"

    def __init__(self) -> None:
        self.same: dict[uuid.UUID, bool] = {}
        self.asked: list[bool] = []

    async def admit(self, requests: Sequence[AdmissionRequest]) -> Sequence[Any]:
        return [{"decision": "ADD", "reason": "oracle admits every episode"} for _ in requests]

    async def resolve(self, requests: Sequence[ConflictRequest]) -> Sequence[Any]:
        answers = []
        for request in requests:
            same = all(self.same.get(f.id, False) for f in request.facts)
            self.asked.append(same)
            winner = str(request.facts[0].id)
            decision = "merge" if same else "keep_both"
            answers.append({"decision": decision, "winner_id": winner, "reason": "oracle"})
        return answers


async def run(rows: list[dict[str, Any]], embedder: Embedder) -> dict[str, Any]:
    judge, clock = OracleJudge(), FrozenClock()
    merged_at = {"learn": 0, "consolidate": 0}
    right = negatives_merged = 0
    async with eval_server(), eval_kernel(embedder, clock=clock, judge=judge) as kernel:
        for row in rows:
            agent = f"pair-{row['id']}"
            a = await kernel.heart.facts.learn(
                FactInput(agent_id=agent, content=row["a"], explicit=True)
            )
            clock.advance(minutes=1)
            b = await kernel.heart.facts.learn(
                FactInput(agent_id=agent, content=row["b"], explicit=True)
            )
            merged = b.action is LearnAction.REINFORCED
            if merged:
                merged_at["learn"] += 1
            else:
                for outcome in (a, b):
                    judge.same[outcome.fact.id] = row["label"] == 1
                await kernel.consolidate(agent)
                statuses = [
                    (await kernel.heart.facts.get(o.fact.id, agent_id=agent)).status for o in (a, b)
                ]
                merged = FactStatus.MERGED in statuses
                merged_at["consolidate"] += merged
            right += merged == (row["label"] == 1)
            negatives_merged += merged and row["label"] == 0
    return {
        "pairs": len(rows),
        "accuracy": round(right / len(rows), 3),
        "negatives_merged": negatives_merged,
        "merged_by_learn": merged_at["learn"],
        "merged_by_the_judge": merged_at["consolidate"],
        "questions_asked": len(judge.asked),
        "questions_about_pairs_labelled_apart": judge.asked.count(False),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path, help="a dedup pairs JSONL file")
    parser.add_argument("--embedder", default="hybrid", help=EMBEDDER_HELP)
    args = parser.parse_args()
    path: Path = args.data
    rows = [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]
    embedder = embedder_from_name(args.embedder)
    print(json.dumps({"data": str(path), **asyncio.run(run(rows, embedder))}, indent=2))


if __name__ == "__main__":
    main()
