"""Pure alignment of two statements' slot views: do they share a frame, and what differs?

Two statements written in parallel ("The Austin office has 40 desks." / "The Boston office
has 55 desks.") align word by word; each span that differs is classified:

- ``value``: a value replaced by a value of the same type (40 -> 55), or a name replaced by
  a name after the verb ("owned by team Red" -> "team Blue"): the slot's value changed;
- ``entity``: an identifier or a word of the holder replaced ("Austin" -> "Boston",
  "unit 2B" -> "unit 3A", "p50" -> "p99"): another thing, never an update of this one;
- ``other``: any other content replaced, added or dropped (an attribute, a scope, a list
  item): the statements say different things;
- ``detail``: one plain word added or dropped after the verb ("dark mode" / "the dark mode
  theme"), or a time adverb ("today"): the same statement, more or less precise.

Spans that differ only by spelling (an abbreviation, an inflection, a compound) count as
equal. Only a parallel pair whose differences are all ``value`` is a sure update; a
parallel pair without differences is a restatement.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import lru_cache

from memory_kernel.heart.facts.reading import same_reading
from memory_kernel.heart.facts.slots import Statement, abbreviation_like
from memory_kernel.heart.facts.synonyms import synonymous

__all__ = ["FrameDiff", "abbreviates", "collapsed", "compare", "may_be_parallel"]

Item = tuple[str, str, str]

# Shared share of the longer side's items from which two statements are in parallel.
_PARALLEL = 0.5
_SKIPPED = frozenset({"of", "and", "the", "for", "&"})
_ADVERBS_OF_TIME = frozenset({"today", "tonight", "currently", "nowadays", "lately", "these"})


@dataclass(frozen=True, slots=True)
class FrameDiff:
    parallel: bool
    shared: float  # aligned share of the longer side
    value: int
    entity: int
    other: int
    detail: int = 0
    moved: int = 0  # words of one side found, unaligned, elsewhere in the other: reordered

    @property
    def same(self) -> bool:
        """Parallel with nothing that differs: a restatement."""
        return self.parallel and not (self.value or self.entity or self.other)

    @property
    def value_only(self) -> bool:
        """Parallel, a value changed and nothing else: a sure update."""
        return self.parallel and self.value > 0 and not (self.entity or self.other)


def _letters(short: str) -> str:
    return re.sub(r"[^a-z0-9]", "", short.lower())


def _numeronym(short: str, word: str) -> bool:
    """k8s = k + 8 letters + s (kubernetes)."""
    m = re.fullmatch(r"([a-z])(\d+)([a-z])", short)
    if m is None:
        return False
    return len(word) == int(m.group(2)) + 2 and word[0] == m.group(1) and word[-1] == m.group(3)


def abbreviates(short: str, words: list[str]) -> bool:
    """Whether ``short`` (as written) abbreviates the words ``words`` (lowercase): their
    initials ("SF", "MBA", "PRs"), a repeated initial ("S3" = Simple Storage Service), a
    numeronym ("k8s"), or letters of one long word in order from its start ("DB")."""
    letters = _letters(short)
    if len(letters) < 2 or not words:
        return False
    if letters.endswith("s") and len(letters) > 2 and short[-1] == "s" and short[:-1].isupper():
        letters = letters[:-1]  # "PRs": the plural of PR
    repeated = re.fullmatch(r"([a-z])(\d)", letters)
    if repeated:
        letters = repeated.group(1) * int(repeated.group(2))
    content = [w for w in words if w not in _SKIPPED]
    if len(content) == 1:
        word = content[0]
        if _numeronym(letters, word):
            return True
        if len(word) >= 2 * len(letters) and word[0] == letters[0]:
            at = 0
            for char in letters:
                at = word.find(char, at)
                if at < 0:
                    return False
                at += 1
            return True
        return False
    return "".join(w[0] for w in content) == letters


_is_abbreviation = lru_cache(maxsize=65_536)(abbreviation_like)


def _equivalent(a: list[Item], b: list[Item]) -> bool:
    """Spans that differ only in spelling: an abbreviation of the other side, or the same
    words by a long shared prefix / compound part."""
    if not a or not b:
        return False
    if len(a) == 1 and _is_abbreviation(a[0][2]) and all(w[2].isalpha() for w in b):
        return abbreviates(a[0][2], [w[2].lower() for w in b])
    if len(b) == 1 and _is_abbreviation(b[0][2]) and all(w[2].isalpha() for w in a):
        return abbreviates(b[0][2], [w[2].lower() for w in a])
    if any(i[0] in ("v", "id") for i in a + b):
        return [i[1] for i in a] == [i[1] for i in b]
    if len(a) != len(b):
        return False
    return all(_same_word(x, y) for x, y in zip(a, b, strict=True))


def _same_word(x: Item, y: Item) -> bool:
    """One word written two ways: a shared long prefix or compound part, or one of them
    abbreviating the other ("DB" / "database" beside "Postgres" / "PostgreSQL")."""
    if _close(x[1], y[1]):
        return True
    if x[2].isalpha() and y[2].isalpha() and synonymous(x[2].lower(), y[2].lower()):
        return True  # another word for the same thing ("bought" / "purchased")
    for short, long_ in ((x, y), (y, x)):
        if _is_abbreviation(short[2]) and long_[2].isalpha():
            return abbreviates(short[2], [long_[2].lower()])
    return False


def _close(a: str, b: str) -> bool:
    short, long_ = (a, b) if len(a) <= len(b) else (b, a)
    return len(short) >= 4 and (long_.endswith(short) or long_.startswith(short))


def _moved(gone: list[str], came: set[str]) -> int:
    """How many of the words ``gone`` from one side came back elsewhere in the other, the
    same or :func:`_close` (which needs four letters on both sides, so only those are
    compared pairwise)."""
    longer = [c for c in came if len(c) >= 4]
    return sum(
        word in came or (len(word) >= 4 and any(_close(word, c) for c in longer)) for word in gone
    )


def _is_name(item: Item) -> bool:
    return item[2][:1].isupper() or item[0] == "id"


def _kind(old: list[Item], new: list[Item]) -> str | None:
    """How one differing span counts (``None``: it does not)."""
    if _equivalent(old, new):
        return None
    if any(i[0] == "id" for i in old + new):
        return "entity"
    old_values = {i[1].split("=")[0] for i in old if i[0] == "v"}
    new_values = {i[1].split("=")[0] for i in new if i[0] == "v"}
    words_old = [i for i in old if i[0] != "v"]
    words_new = [i for i in new if i[0] != "v"]
    if old_values & new_values and not words_old and not words_new:
        return "value"
    added = old or new
    if not (old and new) and all(i[2].lower() in _ADVERBS_OF_TIME for i in added):
        return "detail"
    if not (old and new) and len(added) == 1 and added[0][0] == "p" and not _is_name(added[0]):
        return "detail"
    if old and new and not old_values and not new_values:
        if any(i[0] == "h" for i in old + new):
            return "entity"
        if all(_is_name(i) for i in old + new):
            return "value"
    return "other"


def may_be_parallel(old: Statement, new: Statement) -> bool:
    """A cheap upper bound of :func:`compare`'s shared share: ``False`` means the two are
    certainly not in parallel (most pairs a learn compares), so the alignment is skipped."""
    longer = max(len(old.items), len(new.items))
    if not longer:
        return True
    keys, affixes = new.item_keys, new.affixes
    possible = old.abbreviations + new.abbreviations
    possible += sum(
        k in keys or pre in affixes or suf in affixes for k, pre, suf in old.item_affixes
    )
    return possible / longer >= _PARALLEL


#: The longest run of words an abbreviation stands for ("Master of Business Administration").
_SPAN = 5


def collapsed(items: list[Item], other: list[Item]) -> list[Item]:
    """``items`` with each run of two or more words that an abbreviation of ``other``
    stands for ("San Francisco" beside "SF", "Master of Business Administration" beside
    "MBA": the initials of the words, ``abbreviates``) replaced by that abbreviation, so
    the two sides align wherever each puts it. A class rule, no list: any abbreviation the
    other side writes out in full. Single words are left to the in-place match
    (``_same_word``): one word's letters in order are too weak a sign out of place."""
    codes = [i for i in other if _is_abbreviation(i[2])]
    if not codes:
        return items
    keys = {i[1] for i in items}
    out = list(items)
    for code in codes:
        if code[1] in keys:
            continue
        for start in range(len(out)):
            stop = _abbreviated_run(out, start, code[2])
            if stop is not None:
                out[start:stop] = [(out[start][0], code[1], code[2])]
                break
    return out


def _abbreviated_run(items: list[Item], start: int, code: str) -> int | None:
    """Where a run of plain words from ``start`` that ``code`` abbreviates ends."""
    for stop in range(start + 2, min(start + _SPAN, len(items)) + 1):
        run = items[start:stop]
        if any(i[0] not in ("h", "p") or not i[2].isalpha() for i in run):
            return None
        if abbreviates(code, [i[2].lower() for i in run]):
            return stop
    return None


def compare(old: Statement, new: Statement) -> FrameDiff:
    """Align ``old`` and ``new`` (see the module docstring). An abbreviation written out in
    full on the other side, anywhere in it, aligns with it (``collapsed``) when that makes
    the two a restatement; otherwise the words are aligned as written (a span that only
    partly matches must not turn into a value swap). The same words read another way
    (``reading.same_reading``: another period from now, scope, list, roles or mood)
    differ."""
    diff = _spelled_alike(old, new)
    if diff.same and not same_reading(old.text, new.text):
        # "Dad is retiring this year" / "Dad retired last year": the same words, said of
        # another time (another scope, one more item, the roles exchanged, a wish beside a
        # fact).
        return FrameDiff(parallel=True, shared=diff.shared, value=0, entity=0, other=1)
    return diff


def _spelled_alike(old: Statement, new: Statement) -> FrameDiff:
    a, b = list(old.items), list(new.items)
    diff = _aligned(a, b)
    if diff.same or not (old.abbreviations or new.abbreviations):
        return diff
    a2, b2 = collapsed(a, b), collapsed(b, a)
    if (a2, b2) == (a, b):
        return diff
    restated = _aligned(a2, b2)
    return restated if restated.same else diff


def _aligned(a: list[Item], b: list[Item]) -> FrameDiff:
    if a and sorted(i[1] for i in a) == sorted(i[1] for i in b):
        # The same words in another order ("Kai owns X" / "X is owned by Kai"): a swap of
        # roles around a comparison is a flip, found before this.
        return FrameDiff(parallel=True, shared=1.0, value=0, entity=0, other=0)
    matcher = SequenceMatcher(a=[i[1] for i in a], b=[i[1] for i in b], autojunk=False)
    equal = sum(block.size for block in matcher.get_matching_blocks())
    counts = {"value": 0, "entity": 0, "other": 0, "detail": 0}
    gone: list[Item] = []
    came: list[Item] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        gone += [i for i in a[i1:i2] if i[0] in ("h", "p")]
        came += [i for i in b[j1:j2] if i[0] in ("h", "p")]
        kind = _kind(a[i1:i2], b[j1:j2])
        if kind is None:
            equal += max(i2 - i1, j2 - j1)
        else:
            counts[kind] += 1
    longer = max(len(a), len(b))
    shared = min(equal / longer, 1.0) if longer else 1.0
    moved = _moved([i[1] for i in gone], {i[1] for i in came})
    return FrameDiff(
        moved=moved,
        parallel=shared >= _PARALLEL,
        shared=shared,
        value=counts["value"],
        entity=counts["entity"],
        other=counts["other"],
        detail=counts["detail"],
    )
