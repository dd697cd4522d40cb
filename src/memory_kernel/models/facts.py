"""Public models of the facts API: what ``kernel.heart.facts`` takes and returns."""

from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import Field, StrictFloat, field_validator

from memory_kernel.models.base import InputModel, OutputModel
from memory_kernel.models.enums import DecidedBy, FactStatus
from memory_kernel.validation import (
    MAX_METADATA_BYTES,
    check_agent_id,
    check_json,
    check_text,
    check_unit_interval,
)

__all__ = [
    "MAX_DERIVED_FROM",
    "MAX_FACT_BYTES",
    "PREFERENCE",
    "Fact",
    "FactInput",
    "FactMatch",
    "FactSearchHit",
    "LearnAction",
    "LearnOutcome",
]

#: The category of a fact that says what its holder wants, likes or avoids, a rule they
#: keep or how they want every answer: the context's ``user_traits`` node shows the user's
#: current ones on every turn that includes it, whatever the query's words.
PREFERENCE = "preference"
#: Hard ceiling of a fact's content (``HeartConfig.max_content_bytes`` may lower it).
MAX_FACT_BYTES = 64 * 1024
_MAX_SUBJECT_BYTES = 1024
_MAX_CATEGORY_BYTES = 200
#: Most episode ids one fact may derive from (each must be an episode of the same agent).
MAX_DERIVED_FROM = 1000


class LearnAction(StrEnum):
    """What ``learn`` did with a fact."""

    ADDED = "added"  # a new fact, nothing else changed
    REINFORCED = "reinforced"  # a duplicate: the existing fact got more evidence
    SUPERSEDED = "superseded"  # a new fact that retired older ones (same subject / same slot)
    CONTRADICTION = "contradiction"  # a new fact, linked to similar facts that say the opposite
    REJECTED = "rejected"  # not admitted (filler, greeting, platitude, universal knowledge)


class FactMatch(StrEnum):
    """How a search hit was found."""

    VECTOR = "vector"
    TEXT = "text"  # full-text match, for facts still waiting for an embedding


class Statement(InputModel):
    """What a fact says, validated alike wherever a statement comes in (``FactInput``, an
    extractor's ``ExtractedFact``)."""

    content: str
    subject: str | None = None
    category: str | None = None  # free text; ``PREFERENCE`` is read by the context

    @field_validator("content")
    @classmethod
    def _content(cls, value: str) -> str:
        return check_text(value, field="content", max_bytes=MAX_FACT_BYTES)

    @field_validator("category")
    @classmethod
    def _category(cls, value: str | None) -> str | None:
        if value is None:
            return None
        return check_text(value, field="category", max_bytes=_MAX_CATEGORY_BYTES)

    @field_validator("subject")
    @classmethod
    def _subject(cls, value: str | None) -> str | None:
        if value is None:
            return None
        return check_text(value, field="subject", max_bytes=_MAX_SUBJECT_BYTES, allow_empty=True)


class FactInput(Statement):
    """A fact to learn. Only ``agent_id`` and ``content`` are required."""

    agent_id: str
    confidence: StrictFloat | None = None  # None: HeartConfig.default_confidence
    explicit: bool = False  # the caller insists: skip the admission gate
    defer_embedding: bool = False  # store now as pending_embed; consolidation embeds it
    derived_from: tuple[uuid.UUID, ...] = ()
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("agent_id")
    @classmethod
    def _agent(cls, value: str) -> str:
        return check_agent_id(value)

    @field_validator("confidence")
    @classmethod
    def _confidence(cls, value: float | None) -> float | None:
        return None if value is None else check_unit_interval(value, field="confidence")

    @field_validator("derived_from")
    @classmethod
    def _derived(cls, value: tuple[uuid.UUID, ...]) -> tuple[uuid.UUID, ...]:
        if len(value) > MAX_DERIVED_FROM:
            raise ValueError(f"derived_from holds more than {MAX_DERIVED_FROM} episode ids")
        return value

    @field_validator("metadata")
    @classmethod
    def _metadata(cls, value: dict[str, Any]) -> dict[str, Any]:
        check_json(value, field="metadata", max_bytes=MAX_METADATA_BYTES)
        return value


class Fact(OutputModel):
    """A stored fact (any status); superseded ones are history."""

    id: uuid.UUID
    agent_id: str
    subject: str | None
    subject_key: str | None
    content: str
    category: str | None
    confidence: float
    status: FactStatus
    explicit: bool
    superseded_by: uuid.UUID | None
    merged_into: uuid.UUID | None
    contradicts: tuple[uuid.UUID, ...]
    derived_from: tuple[uuid.UUID, ...]
    evidence_count: int
    last_evidence_at: datetime
    valid_from: datetime
    valid_to: datetime | None
    metadata: dict[str, Any]
    created_at: datetime
    updated_at: datetime

    @property
    def is_current(self) -> bool:
        return self.status in (FactStatus.ACTIVE, FactStatus.PENDING_EMBED)


class LearnOutcome(OutputModel):
    """What happened to one ``learn`` call."""

    action: LearnAction
    fact: Fact  # the new fact, the reinforced one, or the rejected row
    superseded: tuple[uuid.UUID, ...] = ()
    contradicts: tuple[uuid.UUID, ...] = ()
    reason: str
    decided_by: DecidedBy = DecidedBy.RULE
    pending_embedding: bool = False  # stored without a vector (deferred or embedder failed)
    similarity: float | None = None  # cosine to the fact that decided it, if any


class FactSearchHit(OutputModel):
    fact: Fact
    similarity: float
    matched_by: FactMatch
    # A newer current fact among the hits that probably gives this one's slot a new value
    # (shown before it): this one is likely out of date (heart/facts/recency.py).
    newer_value: uuid.UUID | None = None
