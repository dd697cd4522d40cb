"""What a :class:`memory_kernel.protocols.FactExtractor` reads and returns.

The kernel hands an extractor the turns of one agent's conversation, oldest first (the
earlier turns of a batch are context for the later ones), and learns what comes back through
``learn_many`` (admission, dedup, supersession) with provenance to the turn and its episode.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal

from pydantic import StrictFloat, field_validator

from memory_kernel.models.base import OutputModel
from memory_kernel.models.facts import Statement
from memory_kernel.validation import check_unit_interval

__all__ = ["ExtractedFact", "ExtractionTurn"]


class ExtractionTurn(OutputModel):
    """One stored turn, as an extractor sees it."""

    agent_id: str
    session_id: str
    turn_id: uuid.UUID
    episode_id: uuid.UUID | None
    role: Literal["user", "assistant"]
    text: str
    said_at: datetime


class ExtractedFact(Statement):
    """A fact an extractor found in one turn.

    ``content`` is a self-contained statement ("The user's sister Noor lives in Manchester.");
    ``subject`` is the slot it sets ("user sister Noor city"), so a later value of the same
    slot supersedes it exactly; ``None`` leaves the slot to the kernel's own parsing.
    """

    confidence: StrictFloat = 0.7

    @field_validator("confidence")
    @classmethod
    def _confidence(cls, value: float) -> float:
        return check_unit_interval(value, field="confidence")
