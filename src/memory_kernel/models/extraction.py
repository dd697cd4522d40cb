"""What a :class:`memory_kernel.protocols.FactExtractor` reads and returns.

The kernel hands an extractor the turns of one agent's conversation, oldest first (the
earlier turns of a batch are context for the later ones), and learns what comes back through
``learn_many`` (admission, dedup, supersession) with provenance to the turn and its episode.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal

from pydantic import Field, StrictFloat, field_validator

from memory_kernel.models.base import OutputModel
from memory_kernel.models.facts import Statement
from memory_kernel.validation import check_unit_interval

__all__ = ["ExtractedFact", "ExtractionQueueState", "ExtractionReport", "ExtractionTurn"]


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


class ExtractionReport(OutputModel):
    """What a drain of the extraction queue did (``MemoryKernel.extract_pending``).

    ``turns``: turns whose extraction is done (their queue rows are gone); ``facts``: what
    learning their facts did, by ``LearnAction`` (``added``, ``reinforced``, ``superseded``,
    ``rejected``…); ``failed``: turns whose extraction failed and wait to be retried;
    ``parked``: of those, the turns that failed their last allowed attempt."""

    turns: int = 0
    facts: dict[str, int] = Field(default_factory=dict)
    failed: int = 0
    parked: int = 0
    errors: tuple[str, ...] = ()

    def __add__(self, other: ExtractionReport) -> ExtractionReport:
        facts = dict(self.facts)
        for action, n in other.facts.items():
            facts[action] = facts.get(action, 0) + n
        return ExtractionReport(
            turns=self.turns + other.turns,
            facts=facts,
            failed=self.failed + other.failed,
            parked=self.parked + other.parked,
            errors=self.errors + other.errors,
        )


class ExtractionQueueState(OutputModel):
    """An agent's extraction queue (``inspect``): turns waiting (``queued``, of which
    ``retrying`` failed before), turns ``parked`` after their last allowed failure, and the
    newest error."""

    queued: int = 0
    retrying: int = 0
    parked: int = 0
    last_error: str | None = None
