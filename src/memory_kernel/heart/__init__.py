"""Heart: facts, episodes, the conversation's turns and the facts extracted from them."""

from __future__ import annotations

from memory_kernel.heart.episodes import EpisodeService
from memory_kernel.heart.extraction import ExtractionService
from memory_kernel.heart.facts import FactService
from memory_kernel.heart.turns import TurnService
from memory_kernel.runtime import Runtime

__all__ = ["Heart"]


class Heart:
    """``kernel.heart``: ``facts``, ``episodes``, ``turns`` and ``extraction`` (the queue of
    turns waiting for fact extraction)."""

    def __init__(self, runtime: Runtime) -> None:
        self.facts = FactService(runtime)
        self.episodes = EpisodeService(runtime)
        self.turns = TurnService(runtime)
        self.extraction = ExtractionService(runtime, self.facts)
