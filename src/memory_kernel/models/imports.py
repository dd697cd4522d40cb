"""What an import wrote (``MemoryKernel.import_agent``, ``memory-kernel import``)."""

from __future__ import annotations

from memory_kernel.models.base import OutputModel

__all__ = ["ImportReport"]


class ImportReport(OutputModel):
    """How many rows of each kind an import wrote for ``agent_id``; ``embedded``: how many
    of them got a vector from the importing kernel's embedder; ``queued``: turns waiting
    for fact extraction, which the importing kernel's extractor takes."""

    agent_id: str
    facts: int = 0
    episodes: int = 0
    decisions: int = 0
    turns: int = 0
    events: int = 0
    embedded: int = 0
    queued: int = 0
