"""Layer 1's decision classifier on each gate data set, trained two ways (docs/tuning.md,
"Twenty-second round").

    python scripts/gate_sets.py DEV.jsonl [DEV2.jsonl ...] --sets A.jsonl C.jsonl ... \\
        [--sealed B.jsonl ...]

For each file of ``--sets`` and ``--sealed``: noise recorded and decisions missed by the
classifier alone (content only, threshold 0.5), once trained on the development files
(the shipped weights' recipe, ``scripts/train_decision_gate.py``) and once on every other
file of the development files and ``--sets`` (leave one set out). ``--sealed`` files are
never trained on and only their totals are printed.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from memory_kernel.brain.scorer import DecisionScorer, fit

THRESHOLD = 0.5


def _rows(path: Path) -> list[tuple[str, bool]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [
        (str(r["response_text"]), r["label"] == "decision")
        for r in map(json.loads, filter(str.strip, lines))
    ]


def _fit(data: list[list[tuple[str, bool]]]) -> DecisionScorer:
    rows = [row for rows in data for row in rows]
    return fit([t for t, _ in rows], [d for _, d in rows], l2=1.0)


def _scored(scorer: DecisionScorer, rows: list[tuple[str, bool]]) -> str:
    recorded = [d for t, d in rows if scorer.probability(t) >= THRESHOLD]
    decisions = sum(d for _, d in rows)
    noise = len(recorded) - sum(recorded)
    return f"noise {noise}/{len(recorded)} · missed {decisions - sum(recorded)}/{decisions}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dev", nargs="+", type=Path, help="development gate files")
    parser.add_argument("--sets", nargs="+", type=Path, default=[], help="readable sets")
    parser.add_argument("--sealed", nargs="+", type=Path, default=[], help="sealed sets")
    args = parser.parse_args()
    dev = [_rows(p) for p in args.dev]
    sets = {p.name: _rows(p) for p in args.sets}
    shipped = _fit(dev)
    everything = _fit(dev + list(sets.values()))
    for name, rows in sets.items():
        others = _fit(dev + [r for n, r in sets.items() if n != name])
        print(f"{name}: dev-trained {_scored(shipped, rows)} | others {_scored(others, rows)}")
    for path in args.sealed:
        rows = _rows(path)
        print(f"{path.name} (sealed): dev-trained {_scored(shipped, rows)}", end="")
        print(f" | every readable set {_scored(everything, rows)}")


if __name__ == "__main__":
    main()
