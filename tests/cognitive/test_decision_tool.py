"""``kernel.tool_schemas()`` describes ``record_decision`` exactly as ``post_turn`` reads it:
the fields it copies, the required one, the types and bounds ``DecisionInput`` accepts."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from memory_kernel import MemoryKernel, ValidationError
from memory_kernel.brain.tool import RECORD_DECISION_FIELDS
from memory_kernel.models.decisions import DecisionInput
from memory_kernel.models.enums import Stakes
from memory_kernel.models.turns import SkipReason, ToolResult, TurnInput, TurnOutcome
from memory_kernel.storage.tables import decisions

AGENT = "agent-1"
DESCRIPTION = "Adopt trunk-based development with short-lived feature branches."

# A value of each JSON schema type, as a model would send it.
_EXAMPLE = {"string": DESCRIPTION, "number": 0.75, "integer": 1}


def _schema(kernel: MemoryKernel) -> dict[str, Any]:
    by_name = {s["function"]["name"]: s for s in kernel.tool_schemas()}
    assert set(by_name) == {"search_memory", "record_decision", "remember"}
    schema = by_name["record_decision"]
    assert schema["type"] == "function"
    assert set(schema["function"]) == {"name", "description", "parameters"}
    return schema["function"]["parameters"]  # type: ignore[no-any-return]


def _value(spec: dict[str, Any]) -> Any:
    return spec["enum"][0] if "enum" in spec else _EXAMPLE[spec["type"]]


def test_schema_lists_exactly_the_fields_post_turn_reads(kernel: MemoryKernel) -> None:
    params = _schema(kernel)
    assert params["type"] == "object" and params["additionalProperties"] is False
    assert tuple(params["properties"]) == RECORD_DECISION_FIELDS
    assert params["required"] == ["description"]
    props = params["properties"]
    assert props["stakes"]["enum"] == [s.value for s in Stakes]
    assert (props["confidence"]["type"], props["confidence"]["minimum"]) == ("number", 0.0)
    assert props["confidence"]["maximum"] == 1.0
    assert {props[k]["type"] for k in ("description", "reasoning", "category")} == {"string"}
    # Ids, frame and episode come from the turn: the model can never set them.
    decision_fields = set(DecisionInput.model_fields)
    assert set(props) <= decision_fields
    assert not {"agent_id", "session_id", "frame", "episode_id"} & set(props)


async def test_every_schema_field_reaches_the_decision(kernel: MemoryKernel) -> None:
    props = _schema(kernel)["properties"]
    arguments = {name: _value(spec) for name, spec in props.items()}
    ctx = await kernel.pre_turn(
        TurnInput(agent_id=AGENT, session_id="s1", message="How should we branch?", frame="task")
    )
    tool = ToolResult(tool_name="record_decision", arguments=arguments)
    result = await kernel.post_turn(ctx.turn, TurnOutcome(tool_results=[tool]))
    (recorded,) = result.explicit
    for name, value in arguments.items():
        assert getattr(recorded, name) == value, name


@pytest.mark.parametrize(
    "bad", [{"confidence": 1.5}, {"stakes": "enormous"}, {"confidence": "very"}]
)
async def test_values_outside_the_schema_are_refused(
    kernel: MemoryKernel, bad: dict[str, Any]
) -> None:
    ctx = await kernel.pre_turn(
        TurnInput(agent_id=AGENT, session_id="s1", message="Branching?", frame="task")
    )
    tool = ToolResult(tool_name="record_decision", arguments={"description": DESCRIPTION, **bad})
    with pytest.raises(ValidationError):
        await kernel.post_turn(ctx.turn, TurnOutcome(response_text="ok", tool_results=[tool]))


async def test_a_call_with_the_required_fields_records_a_decision(kernel: MemoryKernel) -> None:
    params = _schema(kernel)
    arguments = {name: _value(params["properties"][name]) for name in params["required"]}
    ctx = await kernel.pre_turn(
        TurnInput(agent_id=AGENT, session_id="s1", message="How should we branch?", frame="task")
    )
    tool = ToolResult(tool_name="record_decision", arguments=arguments, output="recorded")
    result = await kernel.post_turn(
        ctx.turn, TurnOutcome(response_text="Recorded.", tool_results=[tool])
    )
    (recorded,) = result.explicit
    assert recorded.description == DESCRIPTION and recorded.active and recorded.finalized
    assert recorded.episode_id == ctx.turn.episode_id and recorded.frame == "task"
    assert result.skipped is SkipReason.NOT_DELIBERATED  # the task frame started nothing
    async with kernel.database.connection() as conn:
        stored = (
            await conn.execute(
                select(decisions.c.description).where(
                    decisions.c.agent_id == AGENT, decisions.c.active
                )
            )
        ).scalars()
        assert list(stored) == [DESCRIPTION]
