"""Judges: who decides the ambiguous cases (admission, contradictions, merges).

``RuleJudge`` is the default (no LLM); ``ChatJudge`` asks an OpenAI-compatible chat model.
Whatever a judge answers is validated, and any failure falls back to the rules.
"""

from memory_kernel.judges.base import (
    AdmissionCandidate,
    AdmissionRequest,
    AdmissionRun,
    AdmissionVerdict,
    Judge,
)
from memory_kernel.judges.chat import ChatJudge
from memory_kernel.judges.rules import AdmissionRules, RuleJudge

__all__ = [
    "AdmissionCandidate",
    "AdmissionRequest",
    "AdmissionRules",
    "AdmissionRun",
    "AdmissionVerdict",
    "ChatJudge",
    "Judge",
    "RuleJudge",
]
