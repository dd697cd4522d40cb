"""Input limits at the models (docs/reliability.md, "Input limits"): every hostile value of
issue 23's attack is refused where the model is built, with ``memory_kernel``'s
``ValidationError`` — never stored to break a later call, never an untyped error later."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest

from memory_kernel import MemoryKernel, ValidationError
from memory_kernel.models.context import ContextRequest
from memory_kernel.models.decisions import DecisionInput
from memory_kernel.models.episodes import EpisodeEndInput, EpisodeInput
from memory_kernel.models.facts import FactInput
from memory_kernel.models.turns import ToolResult, TurnHandle, TurnInput, TurnOutcome
from tests.fuzz.checks import digest

KIB = 1024
MIB = 1024 * KIB
FULL = "m" * MIB  # one message at its 1 MiB limit


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth - 1):
        value = {"k": value}
    return value


# -- 1. the mode -----------------------------------------------------------------------

BAD_MODES = {
    "nul": "RE\x00SPOND",
    "lone surrogate": "RESPOND\ud800",
    "1 MiB": "M" * MIB,
    "empty": "",
    "trailing newline": "RESPOND\n",
    "space": "two words",
    "non-ascii": "ÉCOUTE",
    "65 characters": "M" * 65,
}


@pytest.mark.parametrize("mode", BAD_MODES.values(), ids=BAD_MODES.keys())
def test_a_mode_that_is_no_clean_identifier_is_refused(mode: str) -> None:
    with pytest.raises(ValidationError, match="mode"):
        TurnInput(agent_id="a", session_id="s", message="Hello there", mode=mode)
    with pytest.raises(ValidationError, match="mode"):
        ContextRequest(agent_id="a", message="Hello there", mode=mode)


@pytest.mark.parametrize(
    "mode", ["RESPOND", "ACKNOWLEDGE", "CLARIFY", "ACT", "plan", "deep_work-2"]
)
def test_known_and_custom_modes_are_accepted(mode: str) -> None:
    assert TurnInput(agent_id="a", session_id="s", message="Hi", mode=mode).mode == mode
    assert ContextRequest(agent_id="a", message="Hi", mode=mode).mode == mode


async def test_a_hostile_mode_never_reaches_post_turn(kernel: MemoryKernel) -> None:
    """Before: pre_turn accepted a NUL in the mode, the handle carried it into the context
    report, and every post_turn of that handle failed on the event insert."""
    for mode in ["RE\x00SPOND", "RESPOND\ud800"]:
        try:
            turn = TurnInput(agent_id="a", session_id="s", message="Let us plan", mode=mode)
        except ValidationError:
            continue
        ctx = await kernel.pre_turn(turn)
        await kernel.post_turn(ctx.turn, TurnOutcome(response_text="Sure."))


async def test_a_handle_rebuilt_with_a_hostile_mode_is_refused(kernel: MemoryKernel) -> None:
    turn = TurnInput(agent_id="a", session_id="s", message="What did we decide?")
    ctx = await kernel.pre_turn(turn)
    wire = ctx.turn.model_dump(mode="json")
    assert TurnHandle.model_validate(wire) == ctx.turn
    wire["context"]["inclusion"]["mode"] = "RESPOND\x00"
    with pytest.raises(ValidationError, match="mode"):
        TurnHandle.model_validate(wire)
    await kernel.post_turn(ctx.turn, TurnOutcome(response_text="We chose Postgres."))


# -- 2. sizes --------------------------------------------------------------------------


SEVENTEEN_FULL = [f"{i:02}" + "r" * (64 * KIB - 2) for i in range(17)]


def _handle(**changes: Any) -> dict[str, Any]:
    wire = TurnHandle(
        agent_id="a", session_id="s", episode_id=uuid.uuid4(), decision_id=None,
        frame="task", started_at=datetime(2026, 1, 1, tzinfo=UTC), message="Deploy it",
    ).model_dump(mode="json")  # fmt: skip
    return {**wire, **changes}


@pytest.mark.parametrize(
    "build",
    [
        lambda: FactInput(agent_id="a", content="x is y", metadata={"v": "m" * (64 * KIB)}),
        # 20,000 bytes of text, 120,000 bytes of JSON (each control character is \u00XX).
        lambda: FactInput(agent_id="a", content="x is y", metadata={"v": "\x01" * 20_000}),
        lambda: FactInput(agent_id="a", content="x is y", derived_from=[uuid.uuid4()] * 1001),
        lambda: DecisionInput(
            agent_id="a", session_id="s", description="Use Postgres", metadata={"v": "m" * MIB}
        ),
        lambda: EpisodeInput(agent_id="a", session_id="s", summary="x", metadata={"v": "m" * MIB}),
        # 17 references of 64 KiB: each within its limit, more than 1 MiB together.
        lambda: EpisodeEndInput(agent_id="a", outcome="done", references=SEVENTEEN_FULL),
        lambda: EpisodeEndInput(agent_id="a", outcome="done", artifacts=SEVENTEEN_FULL),
        lambda: TurnHandle.model_validate(_handle(frame="f" * (50 * MIB))),
        lambda: TurnHandle.model_validate(_handle(message="m" * (5 * MIB))),
        lambda: TurnHandle.model_validate_json(json.dumps(_handle(frame="f" * 201))),
        lambda: TurnHandle.model_validate(_handle(agent_id="a\n")),
        lambda: TurnInput(agent_id="a", session_id="s", message="Hi", signals={"v": "s" * MIB}),
        lambda: ToolResult(tool_name="record_decision", arguments={"description": "d" * MIB}),
        lambda: TurnInput(agent_id="a", session_id="s", message="Hi", recent_messages=["m"] * 1001),
        # Five messages of 1 MiB: each within its limit, more than 4 Mi characters together.
        lambda: TurnInput(agent_id="a", session_id="s", message="H", recent_messages=[FULL] * 5),
    ],
    ids=["fact-metadata", "fact-metadata-escaped", "fact-derived-from", "decision-metadata",
         "episode-metadata", "references-total", "artifacts-total", "handle-frame-50MB",
         "handle-message-5MB", "handle-frame-json", "handle-id", "signals", "tool-arguments",
         "recent-count", "recent-total"],
)  # fmt: skip
def test_each_field_has_a_size_limit(build: Any) -> None:
    with pytest.raises(ValidationError):
        build()


def test_limits_are_inclusive() -> None:
    """Right at the limit passes: the limits are sizes, not off-by-one traps."""
    FactInput(agent_id="a", content="x is y", metadata={"v": "m" * (64 * KIB - 8)})
    FactInput(agent_id="a", content="x is y", derived_from=[uuid.uuid4()] * 1000)
    EpisodeEndInput(agent_id="a", outcome="done", references=["r" * (64 * KIB)] * 16)
    TurnHandle.model_validate(_handle(frame="f" * 200, message="m" * MIB))
    TurnInput(agent_id="a", session_id="s", message="Hi", recent_messages=["m" * MIB] * 4)
    TurnInput(agent_id="a", session_id="s", message="Hi", recent_messages=["m"] * 1000)


# -- 3. metadata that is no JSON -------------------------------------------------------

NOT_JSON = [
    {"raw": b"bytes"},
    {"obj": object()},
    {"set": {1, 2}},
    {1: "int key"},
    {"nan": float("nan")},
    {"inf": [float("inf")]},
    {"nul": "a\x00b"},
    {"key\x00": 1},
    {"surrogate": "\udc80"},
    {"huge int": 10**5000},
    _nested(3000),
    {"list": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]},
]


@pytest.mark.parametrize("metadata", NOT_JSON, ids=range(len(NOT_JSON)))
def test_metadata_must_be_bounded_json(metadata: dict[Any, Any]) -> None:
    """Before: bytes/objects raised TypeError inside learn, a 3,000-deep value RecursionError."""
    for build in (
        lambda: FactInput(agent_id="a", content="x is y", metadata=metadata),
        lambda: DecisionInput(agent_id="a", session_id="s", description="Use X", metadata=metadata),
        lambda: EpisodeInput(agent_id="a", session_id="s", summary="x", metadata=metadata),
        lambda: TurnInput(agent_id="a", session_id="s", message="Hi", signals=metadata),
        lambda: ContextRequest(agent_id="a", message="Hi", classification=metadata),
        lambda: ToolResult(tool_name="record_decision", arguments=metadata),
    ):
        with pytest.raises(ValidationError):
            build()


def test_json_metadata_within_the_limits_is_kept() -> None:
    metadata = {"source": "chat", "n": 3, "score": 0.5, "ok": True, "none": None,
                "tags": ["a", "b"], "deep": _nested(31), "unicode": "é🚀", "big": 10**3000,
                "escaped": "\x01" * 10_000}  # fmt: skip
    assert FactInput(agent_id="a", content="x is y", metadata=metadata).metadata == metadata


async def test_unserialisable_metadata_fails_before_learn(kernel: MemoryKernel) -> None:
    with pytest.raises(ValidationError):
        await kernel.heart.facts.learn(
            FactInput(agent_id="a", content="The deploy runs on Fridays", metadata={"b": b"x"})
        )


def test_model_validate_raises_the_library_error() -> None:
    with pytest.raises(ValidationError):
        FactInput.model_validate({"agent_id": "a", "content": "x", "metadata": {"b": b"x"}})
    with pytest.raises(ValidationError):
        FactInput.model_validate_json('{"agent_id": "a", "content": ""}')


# -- 5. numbers are strict -------------------------------------------------------------


@pytest.mark.parametrize("value", [True, False, "0.5", b"0.5", "1"])
def test_numbers_are_not_coerced(value: Any) -> None:
    """Before: confidence=True became 1.0 and "0.5" became 0.5."""
    with pytest.raises(ValidationError):
        FactInput(agent_id="a", content="x is y", confidence=value)
    with pytest.raises(ValidationError):
        DecisionInput(agent_id="a", session_id="s", description="Use X", confidence=value)
    with pytest.raises(ValidationError):
        TurnOutcome(decision_confidence=value)
    with pytest.raises(ValidationError):
        ContextRequest(agent_id="a", message="Hi", token_budget=value)


@pytest.mark.parametrize("budget", [True, "800", 800.0, 0, -5, 10**7])
def test_a_token_budget_riding_in_signals_is_checked_with_the_turn(budget: Any) -> None:
    """Before: TurnInput took it, and pre_turn failed half-way (an ExceptionGroup out of its
    task group) when the context request refused it."""
    with pytest.raises(ValidationError, match="token_budget"):
        TurnInput(agent_id="a", session_id="s", message="Hi", signals={"token_budget": budget})
    assert TurnInput(
        agent_id="a", session_id="s", message="Hi", signals={"token_budget": 800}
    ).signals == {"token_budget": 800}


def test_real_numbers_still_pass() -> None:
    assert FactInput(agent_id="a", content="x is y", confidence=1).confidence == 1.0
    assert (
        DecisionInput(agent_id="a", session_id="s", description="X", confidence=0.7).confidence
        == 0.7
    )
    assert ContextRequest(agent_id="a", message="Hi", token_budget=800).token_budget == 800
    with pytest.raises(ValidationError):
        ContextRequest(agent_id="a", message="Hi", token_budget=800.0)


# -- 6. the brain's keyword arguments ----------------------------------------------------

BAD_TEXTS = {
    "65 KiB": "c" * (64 * KIB + 1),
    "50 MiB": "c" * (50 * MIB),
    "NUL": "ops\x00",
    "lone surrogate": "ops\ud800",
    "an int": 5,
    "bytes": b"ops",
    "a list": ["ops"],
}


@pytest.mark.parametrize("value", BAD_TEXTS.values(), ids=BAD_TEXTS.keys())
@pytest.mark.parametrize("name", ["frame", "category"])
async def test_brain_start_bounds_its_texts(kernel: MemoryKernel, name: str, value: Any) -> None:
    """Before: any size or type was stored (a 50 MiB frame), or failed in the driver."""
    before = await digest(kernel)
    with pytest.raises(ValidationError, match=name):
        await kernel.brain.start("a", "s", "Adopt pgvector for search", **{name: value})
    assert await digest(kernel) == before


@pytest.mark.parametrize("value", BAD_TEXTS.values(), ids=BAD_TEXTS.keys())
@pytest.mark.parametrize("name", ["reasoning", "category"])
async def test_brain_finalize_bounds_its_texts(kernel: MemoryKernel, name: str, value: Any) -> None:
    """Before: ``finalize(reasoning=5)`` raised ``AttributeError`` from the quality gate."""
    started = await kernel.brain.start("a", f"s-{name}", "Adopt pgvector for search")
    assert started is not None
    before = await digest(kernel)
    with pytest.raises(ValidationError, match=name):
        await kernel.brain.finalize(started, agent_id="a", **{name: value})
    assert await digest(kernel) == before


@pytest.mark.parametrize("value", ["not-a-uuid", 5, None, b"x"])
async def test_brain_ids_must_be_uuids(kernel: MemoryKernel, value: Any) -> None:
    if value is not None:
        with pytest.raises(ValidationError, match="episode_id"):
            await kernel.brain.start("a", "s", "Adopt pgvector", episode_id=value)
    with pytest.raises(ValidationError, match="decision_id"):
        await kernel.brain.finalize(value, agent_id="a")


async def test_brain_texts_at_their_limit_pass(kernel: MemoryKernel) -> None:
    limit = "c" * (64 * KIB)
    started = await kernel.brain.start(
        "a", "s-limit", "Adopt pgvector for search", frame=limit, category=limit
    )
    assert started is not None
    decision = await kernel.brain.finalize(
        started, agent_id="a", reasoning="Because one store keeps it simple. " + "r" * 60_000,
        category=limit,
    )  # fmt: skip
    assert decision is not None and decision.category == limit


# -- 7. batches and counts ---------------------------------------------------------------


def _facts(agent: str, n: int) -> list[FactInput]:
    return [
        FactInput(agent_id=agent, subject=f"owner {i}", content=f"Team {i} owns service {i}")
        for i in range(n)
    ]


async def test_learn_many_takes_any_iterable_of_facts(kernel: MemoryKernel) -> None:
    """Before: a generator raised ``TypeError`` (the batch was sliced)."""
    facts = kernel.heart.facts
    from_generator = await facts.learn_many(f for f in _facts("gen", 3))
    from_tuple = await facts.learn_many(tuple(_facts("tup", 2)))
    assert [o.fact.agent_id for o in from_generator] == ["gen"] * 3
    assert len(from_tuple) == 2
    assert await facts.learn_many(iter([])) == []


@pytest.mark.parametrize(
    "batch",
    [None, 5, "The deploy runs on Fridays", b"facts", {"agent_id": "a"},
     FactInput(agent_id="a", content="The deploy runs on Fridays"), [None], ["a fact"]],
    ids=["None", "int", "str", "bytes", "dict", "one fact", "[None]", "[str]"],
)  # fmt: skip
async def test_learn_many_refuses_what_is_no_batch_of_facts(
    kernel: MemoryKernel, batch: Any
) -> None:
    before = await digest(kernel)
    with pytest.raises(ValidationError):
        await kernel.heart.facts.learn_many(batch)
    assert await digest(kernel) == before


@pytest.mark.parametrize(
    "limit",
    [float("nan"), float("inf"), None, "5", True, 0, -1, 2.0, 10_001, 10**30],
    ids=["nan", "inf", "None", "str", "True", "0", "-1", "float", "10001", "1e30"],
)
async def test_embed_pending_limit_is_an_integer_in_range(kernel: MemoryKernel, limit: Any) -> None:
    """Before: NaN raised ``ValueError``, ``None`` ``TypeError``; ``True`` passed as 1."""
    with pytest.raises(ValidationError, match="limit"):
        await kernel.heart.facts.embed_pending("a", limit=limit)
    with pytest.raises(ValidationError, match="limit"):
        await kernel.heart.facts.embed_pending(limit=limit)


async def test_embed_pending_limit_at_its_bounds_passes(kernel: MemoryKernel) -> None:
    await kernel.heart.facts.learn(
        FactInput(agent_id="a", content="The deploy runs on Fridays", defer_embedding=True)
    )
    assert (await kernel.heart.facts.embed_pending("a", limit=1)).embedded == 1
    assert (await kernel.heart.facts.embed_pending(limit=10_000)).embedded == 0


@pytest.mark.parametrize("value", ["not-a-uuid", 5, None])
async def test_fact_and_decision_reads_take_uuids(kernel: MemoryKernel, value: Any) -> None:
    """Before: ``history(5)`` was a ``StorageError`` (``uuid = integer``)."""
    for read in (kernel.heart.facts.get, kernel.heart.facts.history, kernel.brain.get):
        with pytest.raises(ValidationError, match="_id"):
            await read(value, agent_id="a")
