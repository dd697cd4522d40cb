"""Pure word synonymy from a small table shipped with the package (``data/synonyms.txt``,
built from Princeton WordNet 3.0 by ``scripts/build_synonyms.py``; licence in
``data/WORDNET-LICENSE.txt``): two words are synonyms when one of each one's common senses
is the same synset ("bought" / "purchased", "often" / "frequently").

The default embedder is lexical and cannot see that two different words mean the same;
the alignment of two statements (``frames``) asks this instead. A table, not a model:
no antonym, no mere relative ("sister" / "brother", "green" / "blue") is ever a synonym.
"""

from __future__ import annotations

from functools import cache, lru_cache
from importlib import resources

__all__ = ["lemmas", "synonymous"]

# Inflections tried, longest first: (suffix, replacement).
_SUFFIXES = (
    ("ies", "y"), ("ing", ""), ("ing", "e"), ("ied", "y"), ("es", ""), ("ed", ""), ("ed", "e"),
    ("s", ""), ("er", ""), ("est", ""), ("ly", ""),
)  # fmt: skip


@cache
def _table() -> tuple[dict[str, frozenset[int]], dict[str, str]]:
    """(word -> its synsets' line numbers, irregular form -> base word)."""
    text = resources.files("memory_kernel.heart.facts").joinpath("data/synonyms.txt")
    groups: dict[str, set[int]] = {}
    irregular: dict[str, str] = {}
    in_forms = False
    for number, line in enumerate(text.read_text("utf-8").splitlines()):
        if line == "#forms":
            in_forms = True
        elif in_forms:
            form, base = line.split()
            irregular.setdefault(form, base)
        else:
            for word in line.split():
                groups.setdefault(word, set()).add(number)
    return {w: frozenset(g) for w, g in groups.items()}, irregular


@lru_cache(maxsize=16_384)
def lemmas(word: str) -> frozenset[str]:
    """The table's base forms ``word`` (lowercase) may be an inflection of."""
    groups, irregular = _table()
    found = {word} if word in groups else set()
    if word in irregular:
        found.add(irregular[word])
    for suffix, replacement in _SUFFIXES:
        if word.endswith(suffix) and len(word) > len(suffix) + 2:
            base = word[: -len(suffix)] + replacement
            if base in groups:
                found.add(base)
            if len(base) > 2 and base[-1] == base[-2] and base[:-1] in groups:
                found.add(base[:-1])  # stopped -> stopp -> stop
    return frozenset(found)


@lru_cache(maxsize=16_384)
def _senses(word: str) -> frozenset[int]:
    """The synsets of every base form ``word`` may be an inflection of."""
    groups = _table()[0]
    return frozenset(g for lemma in lemmas(word) for g in groups[lemma])


def synonymous(a: str, b: str) -> bool:
    """Two different words (lowercase) with a common sense in one synset."""
    return a != b and not _senses(a).isdisjoint(_senses(b))
