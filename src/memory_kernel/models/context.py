"""Public models of the context engine (``kernel.context``, ``kernel.search_memory``)."""

from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import Field, StrictInt, field_validator

from memory_kernel.models.base import InputModel, OutputModel
from memory_kernel.validation import check_agent_id, check_json, check_mode, check_text, check_texts

__all__ = [
    "AssembledContext",
    "ContextItem",
    "ContextReport",
    "ContextRequest",
    "InclusionReport",
    "MemoryHit",
    "MemorySource",
    "NodeContent",
    "SearchType",
    "Tier",
]

# A turn's message / recent message / tool result: a chat turn, not a document.
_MAX_TEXT_BYTES = 1024 * 1024
#: Largest token budget of one turn's context.
MAX_TOKEN_BUDGET = 1_000_000
# Signals and classification: a few hints for the relevance rules (UTF-8 JSON).
_MAX_SIGNALS_BYTES = 64 * 1024


class MemorySource(StrEnum):
    """Where a recalled memory comes from."""

    FACT = "fact"
    EPISODE = "episode"
    DECISION = "decision"
    TURN = "turn"  # a user message or assistant reply, verbatim (``metadata["role"]``)


class SearchType(StrEnum):
    """What the active ``search_memory`` tool searches."""

    FACTS = "facts"
    EPISODES = "episodes"
    BOTH = "both"  # facts and episodes
    TURNS = "turns"  # the conversation's messages and replies
    ALL = "all"  # facts, episodes and turns


class Tier(StrEnum):
    """Budget tiers, in the order they claim tokens (the seed's context budget table)."""

    RECENT = "recent"  # recent messages: required, first claim
    TOOL = "tool"  # active tool results: privileged
    PROFILE = "profile"  # what the user wants (user_traits): a few lines, before memories
    STREAMED = "streamed"  # recalled memories: opportunistic, dropped whole
    SYSTEM = "system"  # persona, identity, host nodes: fill what is left


class MemoryHit(OutputModel):
    """One recalled memory with the parts of its score.

    ``score = 0.6·similarity + 0.3·confidence + 0.1·recency`` (the seed's relevance score).
    """

    source: MemorySource
    id: uuid.UUID
    text: str
    similarity: float
    confidence: float
    recency: float
    score: float
    created_at: datetime
    outcome: str | None = None  # decisions: their outcome (``None``: pending)
    metadata: dict[str, Any] = Field(default_factory=dict)
    #: Facts: the texts of the older versions this fact replaced, newest first.
    supersedes: tuple[str, ...] = ()
    #: Turns and episodes: the recalled current fact that replaced a value this one states
    #: (it is ranked below that fact, and shown dated with a note; ``context.stale``).
    replaced_by: uuid.UUID | None = None


class ContextItem(OutputModel):
    """One indivisible piece of a node's content (a memory, a message, a host line)."""

    text: str
    hit: MemoryHit | None = None


class NodeContent(OutputModel):
    """What a node provider returned: a titled section of items in one budget tier."""

    node: str
    title: str
    tier: Tier
    items: tuple[ContextItem, ...] = ()


class InclusionReport(OutputModel):
    """What the relevance pipeline decided, and why (one structured log line per turn)."""

    mode: str
    included: tuple[str, ...]
    excluded_hard: tuple[str, ...] = ()
    excluded_soft: tuple[str, ...] = ()
    recovered_soft: tuple[str, ...] = ()
    deps_added: tuple[str, ...] = ()
    overrides_applied: tuple[str, ...] = ()
    dropped_by_cap: tuple[str, ...] = ()
    total_included: int
    est_tokens: int
    enabled: bool = True


class ContextReport(OutputModel):
    """What the engine did for one turn: relevance, fetches, dedup and the budget."""

    inclusion: InclusionReport
    fetched: tuple[str, ...] = ()  # nodes whose providers were awaited
    failed: tuple[str, ...] = ()  # nodes whose providers raised (left out, logged)
    prefetch_used: bool = False
    decisions_deduplicated: int = 0
    items_dropped: int = 0  # whole items that did not fit the budget
    tokens_by_tier: dict[str, int] = Field(default_factory=dict)
    tokens_by_node: dict[str, int] = Field(default_factory=dict)
    tokens_used: int = 0
    token_budget: int = 0


class AssembledContext(OutputModel):
    """The prompt section of one turn: ``text`` fits ``report.token_budget``."""

    text: str
    sections: tuple[NodeContent, ...] = ()  # what made it into ``text``, in order
    hits: tuple[MemoryHit, ...] = ()  # the recalled memories that made it into ``text``
    report: ContextReport


class ContextRequest(InputModel):
    """Everything the engine needs for one turn. Only ``agent_id`` and ``message`` are
    required; ``signals``/``classification`` feed the relevance rules."""

    agent_id: str
    message: str
    session_id: str | None = None
    mode: str = "RESPOND"
    signals: dict[str, Any] = Field(default_factory=dict)
    classification: dict[str, Any] = Field(default_factory=dict)
    returning_from_silence: bool = False
    recent_messages: list[str] = Field(default_factory=list)
    tool_results: list[str] = Field(default_factory=list)
    gists: list[str] | None = None
    token_budget: StrictInt | None = Field(default=None, ge=1, le=MAX_TOKEN_BUDGET)

    @field_validator("agent_id")
    @classmethod
    def _agent(cls, value: str) -> str:
        return check_agent_id(value)

    @field_validator("session_id")
    @classmethod
    def _session(cls, value: str | None) -> str | None:
        return None if value is None else check_agent_id(value, field="session_id")

    @field_validator("message")
    @classmethod
    def _message(cls, value: str) -> str:
        return check_text(value, field="message", max_bytes=_MAX_TEXT_BYTES)

    @field_validator("mode")
    @classmethod
    def _mode(cls, value: str) -> str:
        return check_mode(value)

    @field_validator("signals", "classification")
    @classmethod
    def _hints(cls, value: dict[str, Any], info: Any) -> dict[str, Any]:
        check_json(value, field=info.field_name, max_bytes=_MAX_SIGNALS_BYTES)
        return value

    @field_validator("recent_messages", "tool_results")
    @classmethod
    def _texts(cls, value: list[str], info: Any) -> list[str]:
        return check_texts(value, field=info.field_name, max_bytes=_MAX_TEXT_BYTES)

    @field_validator("gists")
    @classmethod
    def _gists(cls, value: list[str] | None) -> list[str] | None:
        return (
            None if value is None else check_texts(value, field="gists", max_bytes=_MAX_TEXT_BYTES)
        )
