"""What the words the slot view drops say, for two statements with the same content (pure).

The slot view (``slots``) keeps content words, values and identifiers, and
``frames.compare`` aligns those. Function words it drops can still make two statements of
the same content words say different things:

- **a period named from now**: "Dad is retiring this year" / "Dad retired last year",
  "runs every morning" / "ran this morning" (not "the last week of the quarter");
- **the scope**, where both say it: "All of my siblings live abroad" / "Some of my
  siblings…", "always" / "sometimes";
- **an item added to a list**: "allergic to shellfish" / "allergic to shellfish and eggs";
- **a possibility, wish or plan beside what is**: "The user might move to Edinburgh" / "The
  user is moving to Edinburgh", "I'd like to learn the oboe" / "I'm learning the oboe";
- **who does what to whom**: "Tom owes me $50" / "I owe Tom $50", "My brother lent me $500"
  / "I lent my brother $500".

Two statements that differ in any of these are never one statement restated
(``frames.compare``, ``relation.may_be_duplicate``).
"""

from __future__ import annotations

import re
from functools import lru_cache

from memory_kernel.heart.facts.normalise import FUNCTION_WORDS, stem, tokens, value_of

__all__ = ["roles_exchanged", "same_periods", "same_reading"]

# A period named from now ("last year", "this morning", "next Friday"; "yesterday").
_FROM_NOW = re.compile(
    r"(?<!the )\b(?:(?:last|this|next|coming|previous|past) (?:week|weekend|month|year|quarter|"
    r"semester|season|summer|winter|spring|fall|morning|afternoon|evening|night|monday|tuesday|"
    r"wednesday|thursday|friday|saturday|sunday)|yesterday|tomorrow)\b"
)
# Words of scope: how much of the thing, or how often ("each" is "every").
_SCOPE = {
    **{w: w for w in ("all", "every", "some", "most", "many", "few", "several", "only",
                      "always", "never", "sometimes", "usually", "often", "rarely",
                      "occasionally", "seldom")},
    "each": "every",
}  # fmt: skip
_COORDINATED = re.compile(r"\b(?:and|or|plus|as well as)\b")
# Words that put what follows out of fact: a possibility, a wish, a plan, a thought.
_UNREAL = frozenset({
    "might", "maybe", "perhaps", "possibly", "probably", "would", "could", "want", "wants",
    "wanted", "wish", "hope", "hoping", "plan", "plans", "planning", "thinking", "considering",
})  # fmt: skip
# The speaker and the listener as participants, whatever their case: "I owe" / "owes me".
_PERSONS = {"i": "i", "me": "i", "my": "i", "we": "we", "us": "we", "our": "we"}


def same_periods(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` name the same periods from now (none, often)."""
    # Autumn is the fall: "this autumn" / "this fall" name one period.
    a, b = (text.lower().replace("autumn", "fall") for text in (a, b))
    return set(_FROM_NOW.findall(a)) == set(_FROM_NOW.findall(b))


@lru_cache(maxsize=16_384)
def _scope(text: str) -> frozenset[str]:
    return frozenset(_SCOPE[w] for w in tokens(text) if w in _SCOPE)


def _scopes_differ(a: str, b: str) -> bool:
    """Both sides say how much or how often, differently ("all" / "some", "always" /
    "sometimes"); one side alone saying it is often a paraphrase ("every week" /
    "weekly", "most of our traffic" / "the majority of visits")."""
    scope_a, scope_b = _scope(a), _scope(b)
    return bool(scope_a) and bool(scope_b) and scope_a != scope_b


def _item_added(a: str, b: str) -> bool:
    """One side is the other with more items joined ("and", "or", "plus"): every word of
    the other and more, "shellfish" / "shellfish and eggs" (not "My partner and I…" /
    "… with my partner", nor a paraphrase in other words)."""
    joined_a, joined_b = (len(_COORDINATED.findall(t.lower())) for t in (a, b))
    if joined_a == joined_b:
        return False
    words_a, words_b = (_content(t) for t in (a, b))
    more, fewer = (words_a, words_b) if joined_a > joined_b else (words_b, words_a)
    return fewer < more


@lru_cache(maxsize=16_384)
def _content(text: str) -> frozenset[str]:
    return frozenset(stem(w) for w in tokens(text) if w not in FUNCTION_WORDS)


def _unreal(text: str) -> bool:
    # "I'd like to…" is "I would like to…".
    return any(w in _UNREAL or w.endswith("'d") for w in tokens(text))


def same_reading(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` agree in everything this module reads (see above)."""
    return (
        same_periods(a, b)
        and _unreal(a) == _unreal(b)
        and not _scopes_differ(a, b)
        and not _item_added(a, b)
        and not roles_exchanged(a, b)
    )


@lru_cache(maxsize=16_384)
def _participants_in_order(text: str) -> tuple[str, ...] | None:
    """The content words of ``text`` in order (stems; the persons as "i" / "we"; values
    left out), or ``None`` where the roles are not told by the order: a passive ("… by …")
    or two participants joined ("My wife and I…", "… with my wife")."""
    out: list[str] = []
    for word in tokens(text):
        base = word.split("'")[0]
        if base in ("by", "and", "with"):
            return None
        if base in _PERSONS:
            out.append(_PERSONS[base])
        elif base not in FUNCTION_WORDS and value_of(word) is None:
            out.append(stem(base))
    return tuple(out)


def _alike(a: str, b: str) -> bool:
    # "owes" stems to "ow", "owe" stays "owe": short stems match on a one-letter tail.
    return a == b or (abs(len(a) - len(b)) <= 1 and (a.startswith(b) or b.startswith(a)))


def _exchanged(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """``b`` is ``a`` with its first and last parts exchanged around a middle."""
    n = len(a)
    for x in range(1, n - 1):
        for y in range(1, n - x):
            first, middle, last = a[:x], a[x : n - y], a[n - y :]
            if all(_alike(p, q) for p, q in zip([*last, *middle, *first], b, strict=True)):
                return len(first) != len(last) or not all(map(_alike, first, last))
    return False


def roles_exchanged(a: str, b: str) -> bool:
    """The same words with two parts exchanged around what lies between them: who does what
    to whom is reversed ("Tom owes me $50" / "I owe Tom $50", "The dog is afraid of the
    cat" / "The cat is afraid of the dog")."""
    old, new = _participants_in_order(a), _participants_in_order(b)
    if old is None or new is None or len(old) != len(new) or old == new:
        return False
    end = len(old)
    while end and _alike(old[end - 1], new[end - 1]):
        end -= 1
    start = 0
    while start < end and _alike(old[start], new[start]):
        start += 1
    # "My brother lent me…" / "I lent my brother…": the shared "I" of "my" is a part.
    return _exchanged(old[:end], new[:end]) or _exchanged(old[start:end], new[start:end])
