"""Episodes: start dedup, end + ADD/NOT/REPLACE/MERGE admission, search."""

from memory_kernel.heart.episodes.service import EpisodeService

__all__ = ["EpisodeService"]
