"""Judges: who decides the ambiguous cases (admission, contradictions, merges).

``RuleJudge`` is the default (no LLM); ``ChatJudge`` asks an OpenAI-compatible chat model.
"""

from memory_kernel.judges.base import Judge

__all__ = ["Judge"]
