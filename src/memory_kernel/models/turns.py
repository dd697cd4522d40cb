"""The hooks' models: what a turn brings (``TurnInput``), what ``pre_turn`` hands back
(``TurnContext`` with its ``TurnHandle``), what the turn produced (``TurnOutcome``) and what
``post_turn`` did with it (``TurnResult``)."""

from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum
from typing import Any, Self

from pydantic import Field, StrictFloat, field_validator, model_validator

from memory_kernel.models.base import InputModel, OutputModel, ReturnedModel
from memory_kernel.models.context import MAX_TOKEN_BUDGET, ContextReport
from memory_kernel.models.decisions import MAX_DECISION_BYTES, Decision, OutcomeReport
from memory_kernel.models.enums import Stakes
from memory_kernel.models.facts import LearnOutcome
from memory_kernel.validation import (
    check_agent_id,
    check_json,
    check_json_text,
    check_mode,
    check_text,
    check_texts,
    check_unit_interval,
)

__all__ = [
    "Frame",
    "SkipReason",
    "ToolResult",
    "TurnContext",
    "TurnHandle",
    "TurnInput",
    "TurnOutcome",
    "TurnReport",
    "TurnResult",
    "derived_turn_id",
]

# Messages and responses are whole chat turns; beyond this they are documents, not turns.
MAX_TURN_BYTES = 1024 * 1024
#: Largest ``signals`` of a turn and ``arguments`` of a tool call (UTF-8 JSON).
MAX_SIGNALS_BYTES = 64 * 1024
#: Largest context report a ``TurnHandle`` carries (UTF-8 JSON): the node names of one turn.
MAX_REPORT_BYTES = 256 * 1024
_MAX_LABEL_BYTES = 200
# A handle rebuilt without a turn id (a checkpoint written before turn ids existed) carries
# this until its validator derives one; no real turn has it.
_DERIVE = uuid.UUID(int=0)
_TURN_NAMESPACE = uuid.UUID("6f1d2a4e-2b7c-5d8e-9a0b-1c2d3e4f5a6b")


class Frame(StrEnum):
    """The built-in cognitive frames. Hosts may use their own names too (any short label)."""

    CONVERSATION = "conversation"
    QUESTION = "question"
    DECISION = "decision"
    CREATIVE = "creative"
    TASK = "task"
    DEBUG = "debug"


class SkipReason(StrEnum):
    """Why a turn recorded no automatic decision."""

    NOT_DELIBERATED = "not_deliberated"  # the frame does not auto-record
    DUPLICATE = "duplicate"  # layer 2
    INFORMATIONAL = "informational"  # layer 1
    QUALITY_GATE = "quality_gate"  # layer 3
    EXPLICIT = "explicit"  # the agent called record_decision: that one is kept instead


def _label(value: str | None, field: str) -> str | None:
    if value is None:
        return None
    check_text(value, field=field, max_bytes=_MAX_LABEL_BYTES)
    return value.strip().casefold()


class TurnInput(InputModel):
    """One incoming turn. ``frame``: the host's frame selection (``None``: derived by
    ``cognitive.frames.select_frame``). ``signals``: free-form hints (``stakes``…)."""

    agent_id: str
    session_id: str
    message: str
    mode: str = "RESPOND"
    frame: str | None = None
    signals: dict[str, Any] = Field(default_factory=dict)
    recent_messages: list[str] = Field(default_factory=list)

    @field_validator("agent_id", "session_id")
    @classmethod
    def _ids(cls, value: str, info: Any) -> str:
        return check_agent_id(value, field=info.field_name)

    @field_validator("message")
    @classmethod
    def _message(cls, value: str) -> str:
        return check_text(value, field="message", max_bytes=MAX_TURN_BYTES)

    @field_validator("mode")
    @classmethod
    def _mode(cls, value: str) -> str:
        return check_mode(value)

    @field_validator("frame")
    @classmethod
    def _frame(cls, value: str | None) -> str | None:
        return _label(value, "frame")

    @field_validator("signals")
    @classmethod
    def _signals(cls, value: dict[str, Any]) -> dict[str, Any]:
        check_json(value, field="signals", max_bytes=MAX_SIGNALS_BYTES)
        # It rides into the ContextRequest (context.engine.request_from_turn): checked here,
        # so pre_turn never fails on it half-way.
        budget = value.get("token_budget")
        if budget is not None and (
            isinstance(budget, bool)
            or not isinstance(budget, int)
            or not 1 <= budget <= MAX_TOKEN_BUDGET
        ):
            raise ValueError(f"signals.token_budget must be an integer in 1-{MAX_TOKEN_BUDGET}")
        return value

    @field_validator("recent_messages")
    @classmethod
    def _recent(cls, value: list[str]) -> list[str]:
        return check_texts(value, field="recent_messages", max_bytes=MAX_TURN_BYTES)


class TurnHandle(ReturnedModel):
    """What ``post_turn`` needs to know about the turn ``pre_turn`` began.

    It may cross a checkpoint (``model_dump`` / ``model_validate``), so it is validated like
    an input: a rebuilt handle obeys the limits of the ``TurnInput`` it came from.
    """

    agent_id: str
    session_id: str
    episode_id: uuid.UUID
    decision_id: uuid.UUID | None
    frame: str
    started_at: datetime
    #: Set when layer 2 found the deliberation a duplicate of this recent decision.
    duplicate_of: uuid.UUID | None = None
    #: The user's message (the passive prefetch recalls for the next turn from it).
    message: str = ""
    #: The context report of this turn; ``post_turn`` persists it for ``memory-kernel inspect``
    #: (carried here so any kernel instance, in any process, can finish the turn).
    context: ContextReport | None = None
    #: The turn's identity: ``post_turn`` records a handle once, and a repeat (a retry after
    #: a timeout whose commit went through, a re-run graph node) returns the first result.
    #: ``pre_turn`` draws a random one; a handle rebuilt without one (a checkpoint written
    #: before turn ids existed) gets one derived from its other fields, so every rebuild of
    #: that checkpoint is the same turn.
    turn_id: uuid.UUID = _DERIVE

    @field_validator("agent_id", "session_id")
    @classmethod
    def _ids(cls, value: str, info: Any) -> str:
        return check_agent_id(value, field=info.field_name)

    @field_validator("frame")
    @classmethod
    def _frame(cls, value: str) -> str:
        return check_text(value, field="frame", max_bytes=_MAX_LABEL_BYTES)

    @field_validator("message")
    @classmethod
    def _message(cls, value: str) -> str:
        return check_text(value, field="message", max_bytes=MAX_TURN_BYTES, allow_empty=True)

    @field_validator("context")
    @classmethod
    def _context(cls, value: ContextReport | None) -> ContextReport | None:
        if value is not None:
            # post_turn stores the report as an event: it must be JSON Postgres can hold.
            check_mode(value.inclusion.mode, field="context.inclusion.mode")
            try:
                text = value.model_dump_json()
            except ValueError as exc:  # a lone surrogate cannot be written as JSON
                raise ValueError("context is not valid Unicode text") from exc
            check_json_text(text, field="context", max_bytes=MAX_REPORT_BYTES)
        return value

    @model_validator(mode="after")
    def _turn_id(self) -> Self:
        if self.turn_id == _DERIVE:
            # Frozen model: set once, here, while it is being built.
            self.__dict__["turn_id"] = derived_turn_id(self)
        return self


def derived_turn_id(handle: TurnHandle) -> uuid.UUID:
    """The turn id of a handle that carried none: a name-based UUID of the fields that tell
    turns apart (its deliberation, its episode and start time, its message)."""
    parts = (
        handle.agent_id, handle.session_id, handle.episode_id, handle.decision_id,
        handle.started_at.isoformat(), handle.duplicate_of, handle.frame, handle.message,
    )  # fmt: skip
    return uuid.uuid5(_TURN_NAMESPACE, "\x1f".join(str(p) for p in parts))


class TurnReport(OutputModel):
    """What ``pre_turn`` did (the context engine extends it with included/excluded nodes)."""

    frame: str
    episode_reused: bool
    deliberation_started: bool
    tokens_used: int = 0
    #: Which context nodes were included or excluded and why, and the tokens they cost.
    context: ContextReport | None = None


class TurnContext(OutputModel):
    """``text`` goes into the prompt; ``turn`` goes back into ``post_turn``."""

    text: str
    report: TurnReport
    turn: TurnHandle


class ToolResult(InputModel):
    """A tool call of the turn. For ``record_decision`` the ``arguments`` carry the decision
    (``description`` required; ``reasoning``, ``confidence``, ``stakes``, ``category``)."""

    tool_name: str
    output: str = ""
    arguments: dict[str, Any] = Field(default_factory=dict)
    is_error: bool = False

    @field_validator("tool_name")
    @classmethod
    def _name(cls, value: str) -> str:
        return check_text(value, field="tool_name", max_bytes=_MAX_LABEL_BYTES).strip()

    @field_validator("arguments")
    @classmethod
    def _arguments(cls, value: dict[str, Any]) -> dict[str, Any]:
        check_json(value, field="arguments", max_bytes=MAX_SIGNALS_BYTES)
        return value

    @field_validator("output")
    @classmethod
    def _output(cls, value: str) -> str:
        return check_text(value, field="output", max_bytes=MAX_TURN_BYTES, allow_empty=True)


class TurnOutcome(InputModel):
    """What the turn produced. The optional ``decision_*`` fields let the host state the
    decision of a deliberating turn instead of having it drafted from the response;
    ``decision_outcomes`` reports how earlier decisions turned out (recorded in the turn's
    unit of work, as ``kernel.brain.record_outcome`` would)."""

    response_text: str = ""
    tool_results: list[ToolResult] = Field(default_factory=list)
    decision_description: str | None = None
    decision_confidence: StrictFloat | None = None
    decision_stakes: Stakes | None = None
    decision_outcomes: list[OutcomeReport] = Field(default_factory=list, max_length=100)

    @field_validator("response_text")
    @classmethod
    def _response(cls, value: str) -> str:
        return check_text(value, field="response_text", max_bytes=MAX_TURN_BYTES, allow_empty=True)

    @field_validator("decision_description")
    @classmethod
    def _description(cls, value: str | None) -> str | None:
        if value is None:
            return None
        # It becomes the decision's description: the decision's limit.
        return check_text(value, field="decision_description", max_bytes=MAX_DECISION_BYTES)

    @field_validator("decision_confidence")
    @classmethod
    def _confidence(cls, value: float | None) -> float | None:
        return None if value is None else check_unit_interval(value, field="decision_confidence")


class TurnResult(OutputModel):
    """What ``post_turn`` did: the automatic decision it recorded, or why it recorded none
    (``skipped`` with the ``layer`` — 1, 2 or 3 — and ``reason``), plus explicit records."""

    episode_id: uuid.UUID
    decision: Decision | None = None
    explicit: list[Decision] = Field(default_factory=list)
    #: What became of the turn's ``remember`` tool calls, in order.
    remembered: list[LearnOutcome] = Field(default_factory=list)
    skipped: SkipReason | None = None
    layer: int | None = None
    reason: str | None = None
