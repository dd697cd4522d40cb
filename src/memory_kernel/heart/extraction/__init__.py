"""Fact extraction: the durable queue of turns, its drains, and the extractors.

``service.ExtractionService`` (queue and drains), ``worker.ExtractionWorker`` (the
background drain), ``rules.RuleExtractor`` (deterministic, no model),
``chat.ChatExtractor`` (any OpenAI-compatible chat endpoint). A kernel extracts only when
opened with one (``MemoryKernel.open(..., extractor=RuleExtractor())``): measured through the
hooks, the rule extractor's facts do not improve the context yet (docs/tuning.md).
"""

from __future__ import annotations

from memory_kernel.heart.extraction.chat import ChatExtractor
from memory_kernel.heart.extraction.rules import RuleExtractor
from memory_kernel.heart.extraction.service import ExtractionService

__all__ = ["ChatExtractor", "ExtractionService", "RuleExtractor"]
