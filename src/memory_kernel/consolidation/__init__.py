"""Consolidation: the embedding queue, evidence, decay, contradictions, duplicate-cluster
merging and deprecation — run per agent under an advisory lock (``runner.py``)."""

from memory_kernel.consolidation.judging import (
    ConflictFact,
    ConflictJudge,
    ConflictKind,
    ConflictRequest,
    ConflictVerdict,
    Resolution,
)
from memory_kernel.consolidation.queue import EmbeddingWorker
from memory_kernel.consolidation.runner import Consolidator

__all__ = [
    "ConflictFact",
    "ConflictJudge",
    "ConflictKind",
    "ConflictRequest",
    "ConflictVerdict",
    "Consolidator",
    "EmbeddingWorker",
    "Resolution",
]
