"""Episodes: the models of ``kernel.heart.episodes``."""

from __future__ import annotations

import uuid
from collections.abc import Collection
from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import Field, field_validator

from memory_kernel.models.base import InputModel, OutputModel
from memory_kernel.models.enums import AdmissionStatus, DecidedBy, EpisodeStatus
from memory_kernel.validation import MAX_METADATA_BYTES, check_agent_id, check_json, check_text

__all__ = [
    "AdmissionDecision",
    "Episode",
    "EpisodeEnd",
    "EpisodeEndInput",
    "EpisodeHit",
    "EpisodeInput",
    "EpisodeStart",
]

#: Largest summary / outcome / reference accepted (UTF-8 bytes).
MAX_TEXT_BYTES = 64 * 1024
#: Most references (or artifacts) one episode may carry.
MAX_ITEMS = 1000
#: Largest total of an episode's references (or of its artifacts), UTF-8 bytes.
MAX_ITEMS_BYTES = 1024 * 1024


class AdmissionDecision(StrEnum):
    """What admission control did with a finished episode (the judge's JSON vocabulary)."""

    ADD = "ADD"  # new, non-redundant: admitted
    NOT = "NOT"  # redundant: kept for audit, never retrieved
    REPLACE = "REPLACE"  # a better version of the target, which is superseded
    MERGE = "MERGE"  # complementary to the target: both kept, one canonical


def _check_items(values: Collection[str], field: str) -> tuple[str, ...]:
    if isinstance(values, str) or not isinstance(values, Collection):
        raise ValueError(f"{field} must be a list of strings")
    if len(values) > MAX_ITEMS:
        raise ValueError(f"{field} has more than {MAX_ITEMS} items")
    out: dict[str, None] = {}  # a set, kept in the caller's order
    total = 0
    for item in values:
        check_text(item, field=field, max_bytes=MAX_TEXT_BYTES)
        total += len(item.encode("utf-8"))
        if total > MAX_ITEMS_BYTES:
            raise ValueError(f"{field} total more than {MAX_ITEMS_BYTES} bytes")
        out[item] = None
    return tuple(out)


class EpisodeInput(InputModel):
    """An episode to start. An empty summary is allowed but never deduplicates."""

    agent_id: str
    session_id: str
    summary: str
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("agent_id", "session_id")
    @classmethod
    def _ids(cls, value: str, info: Any) -> str:
        return check_agent_id(value, field=info.field_name)

    @field_validator("summary")
    @classmethod
    def _summary(cls, value: str) -> str:
        return check_text(value, field="summary", max_bytes=MAX_TEXT_BYTES, allow_empty=True)

    @field_validator("metadata")
    @classmethod
    def _metadata(cls, value: dict[str, Any]) -> dict[str, Any]:
        check_json(value, field="metadata", max_bytes=MAX_METADATA_BYTES)
        return value


class EpisodeEndInput(InputModel):
    """The arguments of ``EpisodeService.end``, validated together before anything runs."""

    agent_id: str
    outcome: str
    summary: str | None = None
    references: tuple[str, ...] = ()
    artifacts: tuple[str, ...] = ()

    @field_validator("agent_id")
    @classmethod
    def _agent(cls, value: str) -> str:
        return check_agent_id(value)

    @field_validator("outcome")
    @classmethod
    def _outcome(cls, value: str) -> str:
        return check_text(value, field="outcome", max_bytes=MAX_TEXT_BYTES)

    @field_validator("summary")
    @classmethod
    def _summary(cls, value: str | None) -> str | None:
        if value is None:
            return None
        return check_text(value, field="summary", max_bytes=MAX_TEXT_BYTES, allow_empty=True)

    @field_validator("references", "artifacts", mode="before")
    @classmethod
    def _items(cls, value: Collection[str], info: Any) -> tuple[str, ...]:
        return _check_items(value, info.field_name)


class Episode(OutputModel):
    """One episode, as stored."""

    id: uuid.UUID
    agent_id: str
    session_id: str
    summary: str
    status: EpisodeStatus
    outcome: str | None
    admission: AdmissionStatus
    canonical: bool
    canonical_id: uuid.UUID | None
    superseded_by: uuid.UUID | None
    references: tuple[str, ...]
    artifacts: tuple[str, ...]
    usage_count: int
    started_at: datetime
    ended_at: datetime | None
    metadata: dict[str, Any]
    created_at: datetime
    updated_at: datetime

    @property
    def retrievable(self) -> bool:
        """Whether search can return it: finished and admitted (not NOT, not superseded)."""
        return self.admission is AdmissionStatus.ACTIVE


class EpisodeStart(OutputModel):
    """The episode a ``start`` returned; ``deduplicated`` when an ongoing one was reused."""

    episode: Episode
    deduplicated: bool
    #: Why it was reused (the score that matched), for logs.
    reason: str | None = None


class EpisodeEnd(OutputModel):
    """A finished episode and the admission decision taken for it."""

    episode: Episode
    decision: AdmissionDecision
    target_id: uuid.UUID | None
    reason: str
    similarity: float | None
    decided_by: DecidedBy
    #: Why the judge's answer was not used (error, timeout, invalid answer), else ``None``.
    judge_error: str | None = None


class EpisodeHit(OutputModel):
    """A search result: the episode and its similarity to the query (1 = same direction)."""

    episode: Episode
    similarity: float
