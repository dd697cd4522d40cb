"""Drafting the decision of a deliberating turn from its response (pure).

The decision is what the agent *answered*, not what the user asked: the description is the
response's first paragraph, cut at a sentence boundary to ``MAX_DESCRIPTION_CHARS``; what
follows is kept as the reasoning. An explicit ``TurnOutcome.decision_description`` wins.
"""

from __future__ import annotations

import re

from memory_kernel.models.decisions import MAX_DECISION_BYTES
from memory_kernel.models.turns import TurnOutcome
from memory_kernel.similarity import collapsed_head

__all__ = ["MAX_DESCRIPTION_CHARS", "draft_decision", "summarise_message"]

MAX_DESCRIPTION_CHARS = 500
MAX_SUMMARY_CHARS = 200
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def _cut(text: str, limit: int) -> str:
    """``text`` up to ``limit`` characters, ending at a sentence (else word) boundary."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    ends = [m.start() for m in _SENTENCE_END.finditer(head)]
    if ends and ends[-1] > limit // 3:
        return head[: ends[-1]].rstrip()
    space = head.rfind(" ")
    return (head[:space] if space > limit // 3 else head).rstrip() + "…"


def draft_decision(outcome: TurnOutcome) -> tuple[str, str | None]:
    """(description, reasoning) of the decision the response states."""
    if outcome.decision_description is not None:
        return outcome.decision_description.strip(), None
    text = outcome.response_text.strip()
    paragraphs = re.split(r"\n\s*\n", text, maxsplit=1)
    description = _cut(collapsed_head(paragraphs[0], MAX_DESCRIPTION_CHARS), MAX_DESCRIPTION_CHARS)
    rest = text[len(paragraphs[0]) :].strip() if len(paragraphs) > 1 else ""
    reasoning = _within_bytes(rest, MAX_DECISION_BYTES) or None
    return description, reasoning


def _within_bytes(text: str, limit: int) -> str:
    """``text`` if its UTF-8 fits ``limit`` bytes (a decision's texts do: 64 KiB), else
    cut at a sentence boundary to fit, with the ellipsis."""
    if len(text) <= limit // 4 or len(text.encode("utf-8")) <= limit:
        return text
    head = text.encode("utf-8")[: limit - len("…".encode())].decode("utf-8", errors="ignore")
    return _cut(text, len(head))


def summarise_message(message: str) -> str:
    """The episode summary of a turn: the user's message, whitespace-collapsed and cut."""
    return _cut(collapsed_head(message, MAX_SUMMARY_CHARS), MAX_SUMMARY_CHARS)
