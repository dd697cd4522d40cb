"""Pure meaning-flip detection: negation, antonyms, swapped comparisons.

A lexical embedder scores "enabled" and "disabled" versions of a sentence as near-identical,
so these rules are what stop a flipped meaning from being merged as a duplicate.
"""

from __future__ import annotations

from functools import lru_cache

from memory_kernel.heart.facts.normalise import TextFeatures, stem

__all__ = ["flip_reason", "negations", "role_swap"]

# "non" stands alone only where a hyphen was: "non-blocking".
_NEGATIONS = frozenset(
    {"not", "no", "never", "none", "nobody", "nothing", "without", "cannot", "nor", "neither",
     "non"}
)  # fmt: skip

# Opposite words (base forms, stemmed below like the text is); irregular forms map to a base.
_OPPOSITES = (
    ("enable", "disable"), ("improve", "regress|worsen|degrade"), ("increase", "decrease|reduce"),
    ("rise", "fall|drop"), ("add", "remove|delete"), ("join", "leave|quit"),
    ("start", "stop|end|finish"), ("open", "close|shut"), ("accept", "reject|decline"),
    ("allow", "deny|block|forbid|prohibit|ban"), ("approve", "reject|deny"), ("pass", "fail"),
    ("succeed", "fail"), ("success", "failure"), ("win", "lose"), ("like", "dislike|hate"),
    ("love", "hate"), ("true", "false"), ("on", "off"), ("include", "exclude"),
    ("buy", "sell"), ("hire", "fire"), ("lock", "unlock"), ("connect", "disconnect"),
    ("online", "offline"), ("available", "unavailable"), ("valid", "invalid"),
    ("public", "private"), ("higher", "lower"), ("faster", "slower"), ("better", "worse"),
    ("more", "less|fewer"), ("above", "below"), ("always", "never"), ("active", "inactive"),
    ("upgrade", "downgrade"), ("install", "uninstall"), ("gain", "lose"),
    ("agree", "disagree"), ("able", "unable"), ("supported", "unsupported"),
    ("maximum", "minimum"), ("allowed", "forbidden"), ("present", "absent"),
    ("before", "after"), ("since", "until|till"),
)  # fmt: skip
_ANTONYMS: tuple[tuple[str, frozenset[str]], ...] = tuple(
    (stem(left), frozenset(stem(r) for r in right.split("|"))) for left, right in _OPPOSITES
)
_IRREGULAR = {
    "left": "leave", "lost": "lose", "sold": "sell", "bought": "buy", "fell": "fall",
    "rose": "rise", "risen": "rise", "won": "win", "shut": "shut", "quit": "quit",
}  # fmt: skip
_COMPARISON_MARKERS = frozenset({"over", "than", "instead", "versus", "vs", "rather"})


def negations(words: tuple[str, ...]) -> int:
    return sum(1 for w in words if w in _NEGATIONS or w.endswith("n't"))


# Both directions, by stem: each word's opposites, so a flip check is one pass over a text.
_OPPOSITE_OF: dict[str, set[str]] = {}
for _left, _rights in _ANTONYMS:
    for _right in _rights:
        _OPPOSITE_OF.setdefault(_left, set()).add(_right)
        _OPPOSITE_OF.setdefault(_right, set()).add(_left)


@lru_cache(maxsize=65_536)
def _lexemes(words: tuple[str, ...]) -> frozenset[str]:
    return frozenset(stem(_IRREGULAR.get(w, w)) for w in words)


def _antonym_flip(a: TextFeatures, b: TextFeatures) -> str | None:
    """A word of ``a`` whose opposite is in ``b``, where neither text has both."""
    la, lb = _lexemes(a.words), _lexemes(b.words)
    for word in la - lb:
        for opposite in _OPPOSITE_OF.get(word, ()):
            if opposite in lb and opposite not in la:
                return f"opposite words ({word}/{opposite})"
    return None


# Negating prefixes and the shortest word each negates: below it, a prefix is mostly part of
# another word ("insight" is no "in-sight", "discover" no "dis-cover", "around" no "a-round").
_NEGATING_PREFIXES = (("non", 4), ("un", 4), ("dis", 6), ("in", 6), ("im", 6), ("il", 6),
                      ("ir", 6), ("a", 7))  # fmt: skip


def _negated(word: str, other: str) -> bool:
    """``word`` is ``other`` with a negating prefix ("asynchronous" / "synchronous",
    "unpaid" / "paid")."""
    return any(
        len(other) >= shortest and word == prefix + other for prefix, shortest in _NEGATING_PREFIXES
    )


def _prefix_flip(a: TextFeatures, b: TextFeatures) -> str | None:
    """A word of one text that is a word of the other negated by a prefix."""
    wa, wb = set(a.words), set(b.words)
    for mine, other in ((wa - wb, wb - wa), (wb - wa, wa - wb)):
        for word in mine:
            base = next((o for o in other if _negated(word, o)), None)
            if base is not None:
                return f"negated by a prefix ({base}/{word})"
    return None


def role_swap(a: TextFeatures, b: TextFeatures) -> bool:
    """``A over B`` vs ``B over A`` (also than / instead of / rather than / versus)."""
    shared = set(a.content) & set(b.content)
    sides = []
    for feats in (a, b):
        marker = next((i for i, w in enumerate(feats.words) if w in _COMPARISON_MARKERS), None)
        if marker is None:
            return False
        before = {stem(w) for w in feats.words[:marker]} & shared
        after = {stem(w) for w in feats.words[marker + 1 :]} & shared
        sides.append((before, after))
    (before_a, after_a), (before_b, after_b) = sides
    return bool(before_a & after_b) and bool(after_a & before_b)


def flip_reason(a: TextFeatures, b: TextFeatures) -> str | None:
    """Why ``b`` says the opposite of ``a``, or ``None`` when no flip is visible."""
    if negations(a.words) % 2 != negations(b.words) % 2:
        return "negation differs"
    antonym = _antonym_flip(a, b) or _prefix_flip(a, b)
    if antonym is not None:
        return antonym
    if role_swap(a, b):
        return "compared items swapped"
    return None
