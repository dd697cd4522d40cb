"""Start dedup, the pure part: is a recent ongoing episode the same as the new one?"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from memory_kernel.similarity import word_overlap, words

__all__ = ["DuplicateMatch", "OngoingEpisode", "find_duplicate"]


@dataclass(frozen=True, slots=True)
class OngoingEpisode:
    """A recent ongoing episode of the agent; ``similarity`` is ``None`` without vectors."""

    id: uuid.UUID
    summary: str
    similarity: float | None


@dataclass(frozen=True, slots=True)
class DuplicateMatch:
    id: uuid.UUID
    overlap: float
    similarity: float | None

    @property
    def reason(self) -> str:
        sim = "n/a" if self.similarity is None else f"{self.similarity:.2f}"
        return f"ongoing episode with word overlap {self.overlap:.2f}, similarity {sim}"


def find_duplicate(
    summary: str,
    recent: Sequence[OngoingEpisode],
    *,
    overlap_threshold: float,
    similarity_threshold: float,
) -> DuplicateMatch | None:
    """The best ongoing episode ``summary`` duplicates, or ``None``.

    A duplicate has word overlap above ``overlap_threshold`` (the seed's 70%) or embedding
    similarity above ``similarity_threshold``. Empty summaries never match: "no words"
    says nothing about being the same episode. Among matches the highest score wins; ties
    go to the earliest in ``recent`` (callers pass the newest first).
    """
    if not summary.strip():
        return None
    best: DuplicateMatch | None = None
    best_score = -1.0
    mine = words(summary)
    for episode in recent:
        if not episode.summary.strip():
            continue
        overlap = word_overlap(mine, words(episode.summary))
        sim = episode.similarity
        if overlap > overlap_threshold or (sim is not None and sim > similarity_threshold):
            score = max(overlap, sim or 0.0)
            if score > best_score:
                best, best_score = DuplicateMatch(episode.id, overlap, sim), score
    return best
