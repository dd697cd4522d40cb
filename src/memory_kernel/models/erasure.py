"""What an erasure removed (``MemoryKernel.forget``, ``forget_session``, ``erase_agent``)."""

from __future__ import annotations

from memory_kernel.models.base import OutputModel

__all__ = ["ErasureReport"]


class ErasureReport(OutputModel):
    """How many rows of each kind an erasure deleted, cascade included (``docs/privacy.md``).

    ``events``: audit rows about the erased memories; ``bookkeeping``: the turns' extraction
    queue rows and recorded ``post_turn`` results that named them; ``partitions``: the
    agent's own partitions dropped (``erase_agent`` only); ``remade``: the episodes kept
    whose summary was made again without the erased turns (``forget`` of a turn)."""

    agent_id: str
    facts: int = 0
    episodes: int = 0
    turns: int = 0
    decisions: int = 0
    events: int = 0
    bookkeeping: int = 0
    partitions: int = 0
    remade: int = 0

    @property
    def memories(self) -> int:
        """Facts, episodes, turns and decisions erased."""
        return self.facts + self.episodes + self.turns + self.decisions
