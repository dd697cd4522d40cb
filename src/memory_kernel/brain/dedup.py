"""Layer 2, decision dedup: pure comparison of a new description with recent decisions.

The caller loads the same agent's and session's active decisions of the last window (the
service does that under an advisory lock) and passes them here. With vectors on both sides
the measure is cosine similarity (threshold ``dedup_cosine``); when either side has no
vector — the embedder was down when one of them was stored — it falls back to the keyword
containment coefficient |A∩B| / min(|A|, |B|) over content words (stopwords removed), so a
failing embedder degrades dedup instead of disabling it.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memory_kernel.models.decisions import DedupMethod, DedupVerdict
from memory_kernel.similarity import cosine, other_numbers, words

if TYPE_CHECKING:
    from memory_kernel.runtime import Vector

__all__ = ["RecentDecision", "containment", "content_words", "find_duplicate"]

# Words that match between almost any two sentences; containment over them means nothing.
_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "if",
        "of",
        "to",
        "in",
        "on",
        "at",
        "by",
        "for",
        "with",
        "from",
        "as",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "am",
        "do",
        "does",
        "did",
        "has",
        "have",
        "had",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "there",
        "here",
        "i",
        "me",
        "my",
        "we",
        "our",
        "you",
        "your",
        "he",
        "him",
        "his",
        "she",
        "her",
        "they",
        "them",
        "their",
        "what",
        "which",
        "who",
        "whom",
        "so",
        "than",
        "too",
        "very",
        "can",
        "will",
        "just",
        "not",
        "no",
        "s",
        "t",
        "ll",
        "ve",
        "re",
        "d",
        "m",
        "let",
        "us",
    ]
)
# Containment is generous to short texts (two words inside any sentence score 1.0), so a
# smaller side needs at least this many content words before it can count as a duplicate.
_MIN_CONTAINMENT_WORDS = 3


@dataclass(frozen=True, slots=True)
class RecentDecision:
    """What dedup needs of a stored decision."""

    id: uuid.UUID
    description: str
    embedding: Vector | None


def content_words(text: str) -> set[str]:
    """Lowercase word tokens of ``text`` minus stopwords."""
    return {w for w in words(text) if w not in _STOPWORDS}


def containment(a: str, b: str) -> float:
    """Keyword containment coefficient over content words; 0.0 if a side is too short."""
    wa, wb = content_words(a), content_words(b)
    smaller = min(len(wa), len(wb))
    if smaller == 0:
        return 0.0
    if smaller < _MIN_CONTAINMENT_WORDS and wa != wb:
        return 0.0
    return len(wa & wb) / smaller


def find_duplicate(
    description: str,
    vector: Vector | None,
    recent: Sequence[RecentDecision],
    *,
    cosine_threshold: float,
    containment_threshold: float,
) -> DedupVerdict:
    """The most similar recent decision at or above its threshold, if any; never one that
    names other numbers ("set replicas to 4" / "set replicas to 8")."""
    best = DedupVerdict(duplicate=False)
    for other in recent:
        if other_numbers(description, other.description):
            continue
        if vector is not None and other.embedding is not None:
            score, method, threshold = (
                cosine(vector, other.embedding),
                DedupMethod.COSINE,
                cosine_threshold,
            )
        else:
            score, method, threshold = (
                containment(description, other.description),
                DedupMethod.KEYWORD,
                containment_threshold,
            )
        if score >= threshold and score > best.score:
            best = DedupVerdict(
                duplicate=True, duplicate_of=other.id, score=round(score, 4), method=method
            )
    return best
