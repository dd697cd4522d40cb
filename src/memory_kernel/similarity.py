"""Pure similarity utilities shared by Heart, Brain and Context."""

from __future__ import annotations

import re
from collections.abc import Iterator

import numpy as np
import numpy.typing as npt

__all__ = [
    "SPACE_PIECE_CHARS",
    "collapsed_head",
    "cosine",
    "has_words",
    "normalise_subject",
    "other_numbers",
    "space_pieces",
    "text_overlap",
    "word_overlap",
    "words",
]

_WORD = re.compile(r"\w+", re.UNICODE)


_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
_NON_SPACE = re.compile(r"\S+")
_SPACE = re.compile(r"\s")
#: Characters per piece of :func:`space_pieces`.
SPACE_PIECE_CHARS = 16 * 1024


def words(text: str) -> set[str]:
    """The set of lowercase word tokens of ``text``."""
    return set(_WORD.findall(text.lower()))


def other_numbers(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` each name numbers, and not the same ones: "migrate shard 12" /
    "migrate shard 13", "set replicas to 4" / "set replicas to 8" are two things however
    close their vectors lie (a semantic vector barely tells 12 from 13). One side without a
    number may be the other said loosely ("deploy the fix" / "deploy fix 2")."""
    na, nb = set(_NUMBER.findall(a)), set(_NUMBER.findall(b))
    return bool(na and nb) and na != nb


def has_words(text: str) -> bool:
    """Whether ``text`` has a word token (``bool(words(text))``, without reading all of a
    long text)."""
    return _WORD.search(text) is not None


def space_pieces(text: str, size: int = SPACE_PIECE_CHARS) -> Iterator[str]:
    """``text`` in consecutive pieces of about ``size`` characters, each cut just before a
    whitespace character (a piece runs on to the next whitespace, or the end).

    No word token spans whitespace, and ``str.lower()`` — whose only context rule, the
    final sigma, looks no further than the nearest whitespace — lowercases each piece as
    it would the whole text: tokens of the lowercased pieces, in order, are the tokens of
    the lowercased text. A long text is then read in short native calls, so a worker
    thread reading it hands the interpreter back often."""
    start, end = 0, len(text)
    while start < end:
        cut = _SPACE.search(text, start + size) if start + size < end else None
        stop = end if cut is None else cut.start()
        yield text[start:stop]
        start = stop


def collapsed_head(text: str, limit: int) -> str:
    """``" ".join(text.split())`` — whitespace collapsed — read only until it is longer
    than ``limit`` characters: its first ``limit + 1`` characters are the whole collapse's,
    and a 1 MiB text costs what its head costs."""
    parts: list[str] = []
    size = -1
    for match in _NON_SPACE.finditer(text):
        parts.append(match.group())
        size += len(parts[-1]) + 1
        if size > limit:
            break
    return " ".join(parts)


def text_overlap(a: str, b: str) -> float:
    """Word-overlap ratio: shared words over the smaller word set (the seed's measure).

    1.0 for identical texts, 0.0 when either is empty. Cheaper than embeddings and good for
    "is this basically the same text?" (episode and decision dedup).
    """
    return word_overlap(words(a), words(b))


def word_overlap(a: set[str], b: set[str]) -> float:
    """:func:`text_overlap` over word sets already tokenised (a text compared with many
    others is tokenised once)."""
    if not a or not b:
        return 0.0
    return len(a & b) / min(len(a), len(b))


def cosine(a: npt.NDArray[np.floating], b: npt.NDArray[np.floating]) -> float:
    """Cosine similarity; 0.0 when either vector is zero."""
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if na == 0.0 or nb == 0.0:
        return 0.0
    return float(np.dot(a, b) / (na * nb))


def normalise_subject(subject: str | None) -> str | None:
    """The subject key: case-insensitive, whitespace-normalised; ``None`` when empty."""
    if subject is None:
        return None
    key = " ".join(subject.casefold().split())
    return key or None
