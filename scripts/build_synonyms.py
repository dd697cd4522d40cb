"""Build the small synonym table the fact rules ship (``heart/facts/data/synonyms.txt``)
from Princeton WordNet 3.0 as Debian's ``wordnet-base`` package installs it.

    apt-get install wordnet-base && python scripts/build_synonyms.py

Deterministic: one line per synset, its single-word lemmas sorted, lines sorted. Only a
word's common senses count: at most its first two, and only senses attested in WordNet's
sense-tagged corpus (``tagsense_cnt``), so a rare sense of a frequent word ("run" as a
tally) links little. A synset needs two single-word lemmas to link anything. Irregular
forms of the kept lemmas (``*.exc``: "bought" -> "buy") follow after a ``#forms`` line.
No development data is read.
"""

from __future__ import annotations

import argparse
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "src/memory_kernel/heart/facts/data/synonyms.txt"
POS = ("noun", "verb", "adj", "adv")
#: Senses per word that may link it (WordNet lists a word's senses most frequent first).
SENSES = 2


def synsets(wordnet: Path) -> list[list[str]]:
    groups: dict[str, set[str]] = {}
    for pos in POS:
        for line in (wordnet / f"index.{pos}").read_text("latin-1").splitlines():
            if line.startswith(" ") or not line.strip():
                continue
            fields = line.split()
            lemma, pointers = fields[0], int(fields[3])
            tagged = int(fields[5 + pointers])
            offsets = fields[6 + pointers :]
            if not lemma.isalpha():
                continue  # multi-word lemmas ("take_off") and codes
            for offset in offsets[: min(SENSES, tagged)]:
                groups.setdefault(f"{pos[0]}{offset}", set()).add(lemma)
    return sorted(sorted(g) for g in groups.values() if len(g) >= 2)


def forms(wordnet: Path, lemmas: set[str]) -> list[tuple[str, str]]:
    out = set()
    for pos in POS:
        for line in (wordnet / f"{pos}.exc").read_text("latin-1").splitlines():
            fields = line.split()
            if len(fields) >= 2 and fields[0].isalpha():
                out |= {(fields[0], base) for base in fields[1:] if base in lemmas}
    return sorted(out)


def main(wordnet: Path, out: Path) -> None:
    groups = synsets(wordnet)
    lemmas = {w for g in groups for w in g}
    lines = [" ".join(g) for g in groups]
    lines += ["#forms", *(f"{form} {base}" for form, base in forms(wordnet, lemmas))]
    out.write_text("\n".join(lines) + "\n", "utf-8")
    print(f"{out}: {len(groups)} synsets, {len(lemmas)} words")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wordnet", type=Path, default=Path("/usr/share/wordnet"))
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    main(args.wordnet, args.out)
