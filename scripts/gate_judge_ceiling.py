"""How far a judge of layer 1's uncertain band could take the decision gate: a ceiling.

    MEMORY_KERNEL_EVAL_DSN=... python scripts/gate_judge_ceiling.py FILE [FILE ...] \\
        [--band 0.2,0.8|off] [--folds 5 --seed 0] [--sealed]

Each gate file is replayed through ``pre_turn``/``post_turn`` as ``memory-kernel eval gate``
does, then each agent is consolidated with a judge that answers every question from the
gold label, a perfect model (``brain.review``: the band is
``ConsolidationConfig.judge_decision_band``). The figures are what no real judge can beat
with the shipped classifier, and how many responses it is asked about; they are not a
measurement of any model. With ``--folds``, the classifier is refitted on each fold's
training rows and the held-out folds are judged (as ``eval gate --folds``); the figures are
then summed over the held-out folds. ``--sealed``
prints totals over the files only (for sets kept blind).
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from memory_kernel.brain.review import GATE_CHECKS, GateReviewRequest, GateReviewVerdict
from memory_kernel.config import MemoryKernelConfig
from memory_kernel.embeddings.hybrid import HybridEmbedder
from memory_kernel.eval import gate
from memory_kernel.eval.cv import CvSetup, cross_validate
from memory_kernel.eval.gate_model import LearnedGate
from memory_kernel.eval.store import eval_server
from memory_kernel.judges.base import Judge


class LabelJudge:
    """Answers from the gold labels, keyed by the response text; counts the questions about
    the content-only replay (every response deliberates there)."""

    name = "labels"

    def __init__(self, rows: Sequence[dict[str, Any]]) -> None:
        self._label = {str(r["response_text"]): r["label"] == "decision" for r in rows}
        self._label |= {c.response: c.is_decision for c in GATE_CHECKS}  # the run's checks
        self.asked = 0

    async def review_decisions(
        self, requests: Sequence[GateReviewRequest]
    ) -> list[GateReviewVerdict]:
        self.asked += sum(r.agent_id == "gate-content" for r in requests)
        return [
            GateReviewVerdict(is_decision=self._label[r.response], reason="gold label")
            for r in requests
        ]


def _totals(rows: Sequence[dict[str, Any]], decisions: Sequence[gate.GateDecision]) -> list[int]:
    """Content only: recorded, noise recorded, decisions, decisions missed."""
    pairs = list(zip(rows, decisions, strict=True))
    decision_rows = [d.content for r, d in pairs if r["label"] == "decision"]
    noise = sum(d.content for r, d in pairs if r["label"] == "noise")
    return [
        sum(d.content for d in decisions),
        noise,
        len(decision_rows),
        decision_rows.count(False),
    ]


def _line(name: str, totals: Sequence[int], asked: int, rows: int) -> str:
    recorded, noise, decisions, missed = totals
    return (
        f"{name}: content only, noise {noise}/{recorded} ({noise / max(recorded, 1):.3f}) · "
        f"missed {missed}/{decisions} ({missed / max(decisions, 1):.3f}) · "
        f"asked about {asked} of {rows} responses ({asked / max(rows, 1):.2f})"
    )


async def _one(
    path: Path, config: MemoryKernelConfig, folds: int | None, seed: int
) -> tuple[list[int], int, int]:
    rows = gate.load_rows(path)
    judge = LabelJudge(rows)
    embedder = HybridEmbedder()
    if folds is None:
        decisions = await gate.decide(rows, embedder, config, cast(Judge, judge))
        return _totals(rows, decisions), judge.asked, len(rows)
    model = LearnedGate(embedder, config, cast(Judge, judge))
    labels = [str(r["label"]) for r in rows]
    summed = ("content_recorded", "content_noise_recorded", "content_decisions_missed")
    _, table = await cross_validate(
        CvSetup(rows, labels, model, "label"), folds=folds, seed=seed, shown=summed
    )
    recorded, noise, missed = (sum(int(fold[k]) for fold in table) for k in summed)
    # Every row is held out once: the decisions of all folds are the file's.
    return [recorded, noise, labels.count("decision"), missed], judge.asked, len(rows)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument(
        "--band", default=None, help="low,high or off (default: the configured band)"
    )
    parser.add_argument("--folds", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sealed", action="store_true", help="totals over the files only")
    args = parser.parse_args()
    section: dict[str, Any] = {}
    if args.band == "off":  # the same replay without the judge: the figures before it
        section["judge_decision_band"] = None
    elif args.band:
        section["judge_decision_band"] = [float(x) for x in args.band.split(",")]
    config = MemoryKernelConfig.from_mapping({"consolidation": section})
    total, asked, rows = [0, 0, 0, 0], 0, 0
    async with eval_server():
        for path in args.files:
            figures, n_asked, n_rows = await _one(path, config, args.folds, args.seed)
            total = [a + b for a, b in zip(total, figures, strict=True)]
            asked, rows = asked + n_asked, rows + n_rows
            if not args.sealed:
                print(_line(path.name, figures, n_asked, n_rows))
    if args.sealed or len(args.files) > 1:
        print(_line("all files", total, asked, rows))


if __name__ == "__main__":
    asyncio.run(main())
