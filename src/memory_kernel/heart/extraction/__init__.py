"""Fact extraction: the durable queue of turns, its drains, and the extractors.

``service.ExtractionService`` (queue and drains), ``worker.ExtractionWorker`` (the
background drain), ``rules.RuleExtractor`` (the default: deterministic, no model),
``chat.ChatExtractor`` (any OpenAI-compatible chat endpoint).
"""

from __future__ import annotations

from memory_kernel.heart.extraction.chat import ChatExtractor
from memory_kernel.heart.extraction.rules import RuleExtractor
from memory_kernel.heart.extraction.service import ExtractionService
from memory_kernel.protocols import FactExtractor

__all__ = ["ChatExtractor", "ExtractionService", "RuleExtractor", "default_extractor"]


def default_extractor() -> FactExtractor | None:
    """The extractor a kernel opened without ``extractor=`` uses: none yet. Measured
    through the hooks (docs/tuning.md, "Fact extraction"), ``RuleExtractor``'s facts do not
    improve the context today (conversations_dev answer in context 0.962 without, 0.932
    with; stale shown as current 0.04 → 0.12), so extraction is opt-in:
    ``MemoryKernel.open(..., extractor=RuleExtractor())`` or a ``ChatExtractor``."""
    return None
