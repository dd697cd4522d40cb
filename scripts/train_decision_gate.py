"""Train the decision classifier (layer 1 of the decision gate) on labelled responses.

    python scripts/train_decision_gate.py DEV.jsonl [DEV2.jsonl ...] [--out PATH] [--l2 1.0]

Each file is a decision-gate data set (``{"id", "response_text", "label": "decision"|"noise",
...}``, see shared/eval/README.md). Train on development files only: the rows the figures in
docs/tuning.md are cross-validated on, never the held-out sets. The shipped weights
(``src/memory_kernel/brain/decision_scorer.json``) were made with

    python scripts/train_decision_gate.py \\
        ../shared/eval/dev/decision_gate/decision_gate_dev.jsonl \\
        ../shared/eval/dev/decision_gate/decision_gate_authored_dev.jsonl

The fit is deterministic (Newton's method from zero), so the same files give the same JSON.
``l2`` is fixed at 1.0 (a unit Gaussian prior on each weight, scikit-learn's default ``C=1``)
rather than tuned: with 150 rows a tuned penalty is one more thing fitted to them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

from memory_kernel.brain.scorer import fit

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "src/memory_kernel/brain/decision_scorer.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="+", type=Path, help="decision-gate JSONL files")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--l2", type=float, default=1.0)
    args = parser.parse_args()
    texts: list[str] = []
    labels: list[bool] = []
    files = []
    for path in args.data:
        raw = path.read_bytes()
        rows = [json.loads(line) for line in raw.decode("utf-8").splitlines() if line.strip()]
        texts += [str(r["response_text"]) for r in rows]
        labels += [r["label"] == "decision" for r in rows]
        files.append(
            {"file": path.name, "rows": len(rows), "sha256": hashlib.sha256(raw).hexdigest()}
        )
    scorer = fit(texts, labels, l2=args.l2, trained_on={"files": files})
    args.out.write_text(json.dumps(scorer.to_json(), indent=2) + "\n", encoding="utf-8")
    weights = sorted(scorer.weights.items(), key=lambda kv: kv[1])
    print(f"{len(texts)} rows ({sum(labels)} decisions) -> {args.out}")
    for name, weight in weights:
        print(f"  {name:16s} {weight:+.3f}")
    print(f"  {'bias':16s} {scorer.bias:+.3f}")


if __name__ == "__main__":
    main()
