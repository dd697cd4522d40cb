"""How far the consolidation judge's restatement band could take dedup: a ceiling.

    MEMORY_KERNEL_EVAL_DSN=... python scripts/dedup_judge_ceiling.py \\
        ../shared/eval/dev/dedup_pairs/dedup_pairs_authored_dev.jsonl [--embedder hybrid|st|…]

``memory-kernel eval dedup --judge`` with a judge that answers every question from the gold
labels, a perfect model: "merge" for exactly a pair labelled the same, "keep both" otherwise.
Each pair is learned in an agent of its own, then each pair ``learn`` kept apart is
consolidated with that judge. The figures are what no real judge can beat with the embedder
(the default one unless ``--embedder``) and the shipped weights, and how many questions it
is asked; they are not a measurement of any model. On the development files the shipped
duplicate weights were fitted on, it is a development figure, not a held-out one.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from memory_kernel.consolidation.checks import check_answer
from memory_kernel.consolidation.judging import ConflictRequest
from memory_kernel.eval.dedup import load_pairs, run
from memory_kernel.eval.embedders import EMBEDDER_HELP, embedder_from_name
from memory_kernel.eval.store import eval_server
from memory_kernel.judges.base import AdmissionRequest, Judge


class OracleJudge:
    """Merges exactly a pair labelled the same (by its two texts); keeps anything else."""

    name = "oracle"

    def __init__(self, same: set[frozenset[str]]) -> None:
        self.same = same
        self.apart_asked = 0

    async def admit(self, requests: Sequence[AdmissionRequest]) -> Sequence[Any]:
        return [{"decision": "ADD", "reason": "oracle admits every episode"} for _ in requests]

    async def resolve(self, requests: Sequence[ConflictRequest]) -> Sequence[Any]:
        answers = []
        for request in requests:
            check = check_answer(f.id for f in request.facts)  # a run's check question
            if check is not None:
                answers.append(check)
                continue
            same = frozenset(f.content for f in request.facts) in self.same
            self.apart_asked += not same
            winner = str(request.facts[0].id)
            decision = "merge" if same else "keep_both"
            answers.append({"decision": decision, "winner_id": winner, "reason": "oracle"})
        return answers


async def _main(path: Path, embedder_name: str) -> dict[str, Any]:
    _, pairs = load_pairs(path)
    judge = OracleJudge({frozenset((p.a, p.b)) for p in pairs if p.same})
    async with eval_server():
        report = await run(path, embedder_from_name(embedder_name), judge=cast(Judge, judge))
    keys = ("accuracy", "negatives_merged", "merged_by_learn", "merged_by_consolidation",
            "judge_questions")  # fmt: skip
    return {
        **{k: report.metrics[k] for k in keys},
        "questions_about_pairs_apart": judge.apart_asked,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path, help="a dedup pairs JSONL file")
    parser.add_argument("--embedder", default="hybrid", help=EMBEDDER_HELP)
    args = parser.parse_args()
    figures = asyncio.run(_main(args.data, args.embedder))
    print(json.dumps({"data": str(args.data), **figures}, indent=2))


if __name__ == "__main__":
    main()
