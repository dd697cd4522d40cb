"""Facts: learn (supersession, dedup, contradictions, admission), search and history."""

from memory_kernel.heart.facts.service import FactService

__all__ = ["FactService"]
