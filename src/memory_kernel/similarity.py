"""Pure similarity utilities shared by Heart, Brain and Context."""

from __future__ import annotations

import re

import numpy as np
import numpy.typing as npt

__all__ = ["cosine", "normalise_subject", "text_overlap", "word_overlap", "words"]

_WORD = re.compile(r"\w+", re.UNICODE)


def words(text: str) -> set[str]:
    """The set of lowercase word tokens of ``text``."""
    return set(_WORD.findall(text.lower()))


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
