"""Which WordNet relations link the words two parallel statements swap in place?

    python scripts/wordnet_span_links.py --dev ../shared/eval/dev

A measurement, not a rule: for every pair of the dedup and knowledge-update development
files that ``frames.compare`` finds written in parallel, each one-word-for-one-word swap
("runs" / "manages", "green" / "blue") is looked up in Princeton WordNet 3.0 (Debian's
``wordnet-base``, ``/usr/share/wordnet``), and the relations found are counted by the pair's
label. A relation could let the frame rules treat a swap as the same meaning only if it
links restatements ("same") and never the other labels. Relations, each over all of a
word's senses unless said:

- ``table``: the shipped synonym table (``heart/facts/synonyms.py``: common senses);
- ``synset``: a sense of each in one synset; ``similar``: adjective "similar to" (``&``);
- ``hypernym``: one's sense is a direct hypernym (or instance-of) of the other's;
- ``sister``: senses with a direct hypernym in common; ``antonym``: ``!`` either way;
- ``derived``: derivationally related forms (``+``).
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from difflib import SequenceMatcher
from pathlib import Path

from memory_kernel.heart.facts.frames import compare
from memory_kernel.heart.facts.slots import statement
from memory_kernel.heart.facts.synonyms import synonymous

POS = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}
SUFFIXES = {
    "n": (("s", ""), ("es", ""), ("ies", "y")),
    "v": (("s", ""), ("es", ""), ("ies", "y"), ("ed", ""), ("ed", "e"), ("ing", ""), ("ing", "e")),
    "a": (("er", ""), ("est", ""), ("er", "e"), ("est", "e")),
    "r": (),
}  # fmt: skip
FILES = (
    "dedup_pairs/dedup_pairs_authored_dev.jsonl", "dedup_pairs/dedup_pairs_dev.jsonl",
    "knowledge_update/ku_update_pairs_dev.jsonl", "knowledge_update/ku_distinct_pairs_dev.jsonl",
    "knowledge_update/ku_pairs_dev.jsonl",
)  # fmt: skip
Sense = tuple[str, str]  # (part of speech, synset offset)


class WordNet:
    def __init__(self, root: Path) -> None:
        self.index: dict[tuple[str, str], list[str]] = {}
        self.forms: dict[tuple[str, str], list[str]] = {}
        self.pointers: dict[Sense, list[tuple[str, Sense]]] = {}
        for p, name in POS.items():
            for line in (root / f"index.{name}").read_text("latin-1").splitlines():
                if line.strip() and not line.startswith(" "):
                    f = line.split()
                    self.index[(f[0], p)] = f[6 + int(f[3]) :]
            for line in (root / f"{name}.exc").read_text("latin-1").splitlines():
                f = line.split()
                self.forms.setdefault((f[0], p), []).extend(f[1:])
            for line in (root / f"data.{name}").read_text("latin-1").splitlines():
                if not line.startswith(" "):
                    self.pointers[(p, line[:8])] = _pointers(line)

    def senses(self, word: str) -> set[Sense]:
        out: set[Sense] = set()
        for p in POS:
            bases = {word, *self.forms.get((word, p), [])}
            bases |= {word[: -len(s)] + r for s, r in SUFFIXES[p] if word.endswith(s)}
            for base in bases:
                out |= {(p, o) for o in self.index.get((base, p), [])}
        return out

    def linked(self, senses: set[Sense], symbols: set[str]) -> set[Sense]:
        return {t for s in senses for sym, t in self.pointers.get(s, []) if sym in symbols}

    def relations(self, a: str, b: str) -> set[str]:
        sa, sb = self.senses(a), self.senses(b)
        up = {"@", "@i"}
        found = {"table"} if synonymous(a, b) else set()
        checks = {
            "synset": bool(sa & sb),
            "similar": bool(self.linked(sa, {"&"}) & sb or self.linked(sb, {"&"}) & sa),
            "hypernym": bool(self.linked(sa, up) & sb or self.linked(sb, up) & sa),
            "sister": bool(self.linked(sa, up) & self.linked(sb, up)),
            "antonym": bool(self.linked(sa, {"!"}) & sb or self.linked(sb, {"!"}) & sa),
            "derived": bool(self.linked(sa, {"+"}) & sb or self.linked(sb, {"+"}) & sa),
        }
        return found | {name for name, hit in checks.items() if hit}


def _pointers(line: str) -> list[tuple[str, Sense]]:
    f = line.split(" | ")[0].split()
    at = 4 + 2 * int(f[3], 16)
    out = []
    for _ in range(int(f[at])):
        symbol, offset, pos = f[at + 1], f[at + 2], f[at + 3]
        out.append((symbol, ("a" if pos == "s" else pos, offset)))
        at += 4
    return out


def swaps(a: str, b: str) -> list[tuple[str, str]]:
    """The one-word-for-one-word swaps of a pair written in parallel (plain words only)."""
    sa, sb = statement(a), statement(b)
    if not compare(sa, sb).parallel:
        return []
    x, y = list(sa.items), list(sb.items)
    matcher = SequenceMatcher(a=[i[1] for i in x], b=[i[1] for i in y], autojunk=False)
    out = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "replace" and i2 - i1 == 1 and j2 - j1 == 1:
            old, new = x[i1], y[j1]
            if old[0] in ("h", "p") and new[0] in ("h", "p") and (old[2] + new[2]).isalpha():
                out.append((old[2].lower(), new[2].lower()))
    return out


def main(dev: Path, wordnet: Path) -> None:
    wn = WordNet(wordnet)
    counts: Counter[tuple[str, str]] = Counter()
    for name in FILES:
        for line in (dev / name).read_text("utf-8").splitlines():
            row = json.loads(line)
            if "a" in row:
                a, b, label = row["a"], row["b"], "same" if row["label"] else "apart"
            else:
                a, b, label = row["old_fact"], row["new_fact"], row.get("label", "update")
            for old, new in swaps(a, b):
                found = wn.relations(old, new)
                counts.update((label, r) for r in {"swaps", *found})
                key = row.get("id", row.get("qi"))
                print(f"{Path(name).stem} {key} {label}: {old} / {new}: {sorted(found)}")
    labels = sorted({label for label, _ in counts})
    print("relation   " + " ".join(f"{label:>9}" for label in labels))
    for rel in ("swaps", "table", "synset", "similar", "hypernym", "derived", "sister", "antonym"):
        print(f"{rel:<10} " + " ".join(f"{counts[(label, rel)]:>9}" for label in labels))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dev", type=Path, default=Path("../shared/eval/dev"))
    parser.add_argument("--wordnet", type=Path, default=Path("/usr/share/wordnet"))
    args = parser.parse_args()
    main(args.dev, args.wordnet)
