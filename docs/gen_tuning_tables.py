"""Render ``memory-kernel tune --json`` reports as the markdown tables of docs/tuning.md.

    python docs/gen_tuning_tables.py hashing.json st.json

Reports of the same sweep (same suite and data) with different embedders become one table,
an embedder per column group; the best value of each is marked in bold.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

_COLUMNS = ("precision", "recall", "f1")


def _load(path: Path) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    if "sweep" not in report.get("tables", {}):
        raise SystemExit(f"{path}: not a `memory-kernel tune` report")
    return report


def _short(embedder: str) -> str:
    return embedder.removeprefix("st:sentence-transformers/")


def render(reports: list[dict[str, Any]]) -> str:
    """One markdown table: threshold, then precision/recall/F1 per embedder ("–" where an
    embedder was not measured at that value)."""
    by_value = [{row["threshold"]: row for row in r["tables"]["sweep"]} for r in reports]
    grid = sorted({t for rows in by_value for t in rows})
    head = ["threshold"] + [f"{c} ({_short(r['embedder'])})" for r in reports for c in _COLUMNS]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for threshold in grid:
        cells = [f"{threshold:g}"]
        for report, rows in zip(reports, by_value, strict=True):
            row = rows.get(threshold)
            best = threshold == report["metrics"]["best_threshold"]
            for column in _COLUMNS:
                shown = "–" if row is None else f"{row[column]:.3f}"
                cells.append(f"**{shown}**" if best and row is not None else shown)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reports", nargs="+", type=Path, help="tune --json files")
    args = parser.parse_args()
    print(render([_load(p) for p in args.reports]), end="")


if __name__ == "__main__":
    main()
