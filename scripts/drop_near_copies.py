"""Join labelled JSONL files into one, leaving out every row that nearly copies a row the
project already measures or trains with.

    python scripts/drop_near_copies.py --dev ../shared/eval/dev --out OUT.jsonl IN.jsonl [...]

A row is left out when one of its texts (``old_fact``, ``new_fact``, ``content``,
``response_text``, ``a``, ``b``) shares half its words or more (Jaccard of lowercase word
sets) with a text of a development file or of a probe already in ``docs/probes``. Writers
reach for the same stock sentences ("I drive a 2015 Honda Civic", "Standup is at 9:30"), so
a new set measured as it was written would partly measure rows the rules were fitted to.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEXTS = ("old_fact", "new_fact", "content", "response_text", "a", "b")
NEAR = 0.5
_WORD = re.compile(r"[a-z0-9']+")


def words(text: str) -> frozenset[str]:
    return frozenset(_WORD.findall(text.lower()))


def texts_of(row: dict[str, object]) -> list[str]:
    return [str(row[k]) for k in TEXTS if isinstance(row.get(k), str)]


def rows_of(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def near(text: frozenset[str], known: list[frozenset[str]]) -> bool:
    return any(len(text & k) >= NEAR * len(text | k) for k in known if text | k)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dev", type=Path, required=True, help="shared/eval/dev")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("files", nargs="+", type=Path)
    args = parser.parse_args()
    measured = [*args.dev.glob("*/*.jsonl"), *(ROOT / "docs/probes").glob("*.jsonl")]
    measured = [path for path in measured if path.resolve() != args.out.resolve()]
    known = [words(t) for path in measured for row in rows_of(path) for t in texts_of(row)]
    rows = [row for path in args.files for row in rows_of(path)]
    kept = [row for row in rows if not any(near(words(t), known) for t in texts_of(row))]
    lines = [json.dumps(row, ensure_ascii=False) + "\n" for row in kept]
    args.out.write_text("".join(lines), "utf-8")
    print(f"{args.out}: {len(kept)} of {len(rows)} rows kept")


if __name__ == "__main__":
    main()
