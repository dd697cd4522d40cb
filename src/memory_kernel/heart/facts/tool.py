"""The ``remember`` tool: the model stores a fact on purpose.

Like ``record_decision``, the host runs nothing: it reports the model's call in
``TurnOutcome.tool_results`` and ``post_turn`` learns the fact in the turn's unit of work —
through fact admission, dedup and supersession like any ``learn`` (a ``subject`` makes the
supersession exact: the newest fact of a subject is the current one). The fact records where
it came from: the turn's episode (``derived_from``) and ``metadata`` (``source: remember``,
the session). ``preference: true`` gives it the category ``PREFERENCE``: what the user wants
is shown on every later turn (``context.traits``). The schema and the arguments read back are
built from one table here, so they cannot drift apart.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from memory_kernel.errors import ValidationError
from memory_kernel.models.facts import PREFERENCE, FactInput
from memory_kernel.models.turns import TurnHandle, TurnOutcome

__all__ = [
    "REMEMBER_OPTIONAL", "REMEMBER_TOOL", "remember_input", "remember_inputs", "remember_schema",
]  # fmt: skip

REMEMBER_TOOL = "remember"
#: The arguments post_turn copies into the FactInput (``content`` is required).
REMEMBER_OPTIONAL = ("subject", "confidence")

_PROPERTIES: dict[str, dict[str, Any]] = {
    "content": {
        "type": "string",
        "minLength": 1,
        "description": (
            "The fact, as one self-contained statement (e.g. 'The user's sister Noor lives in "
            "Manchester')."
        ),
    },
    "subject": {
        "type": "string",
        "description": (
            "What the fact is about, the same words each time (e.g. 'sister Noor city'): a "
            "newer fact of the same subject replaces the older one."
        ),
    },
    "confidence": {
        "type": "number",
        "minimum": 0.0,
        "maximum": 1.0,
        "description": "How sure you are, from 0 to 1 (default 0.7).",
    },
    "preference": {
        "type": "boolean",
        "description": (
            "True when the fact is what the user wants, likes or avoids, a rule they keep or "
            "how they want every answer (e.g. 'The user wants code examples in TypeScript'): "
            "it is then shown on every later turn, whatever it is about."
        ),
    },
}


def remember_schema() -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": REMEMBER_TOOL,
            "description": (
                "Remember a fact for later conversations: something the user told you about "
                "themselves, their plans or preferences, or a change to something you knew. "
                "Everything said is kept anyway; use this for what must be known as current."
            ),
            "parameters": {
                "type": "object",
                "properties": _PROPERTIES,
                "required": ["content"],
                "additionalProperties": False,
            },
        },
    }


def remember_inputs(turn: TurnHandle, outcome: TurnOutcome) -> list[FactInput]:
    """The facts of the turn's successful ``remember`` tool calls."""
    found = []
    for result in _calls(outcome.tool_results):
        args = dict(result.arguments)
        found.append(
            remember_input(
                {**args, "content": args.get("content") or result.output},
                agent_id=turn.agent_id,
                derived_from=(turn.episode_id,),
                metadata={"source": REMEMBER_TOOL, "session_id": turn.session_id},
            )
        )
    return found


def remember_input(
    arguments: Mapping[str, Any], *, agent_id: str, metadata: dict[str, Any],
    derived_from: tuple[uuid.UUID, ...] = (),
) -> FactInput:  # fmt: skip
    """The fact of one ``remember`` call's arguments (``content``, and ``subject``,
    ``confidence``, ``preference`` when given), from the hooks or ``memory-kernel mcp``."""
    content = arguments.get("content")
    if not isinstance(content, str) or not content.strip():
        raise ValidationError("a remember tool result carries no content")
    known = {k: arguments[k] for k in REMEMBER_OPTIONAL if arguments.get(k) is not None}
    preference = arguments.get("preference")
    if preference is not None and not isinstance(preference, bool):  # 1 == True in Python
        raise ValidationError("a remember tool result's preference must be true or false")
    if preference:
        known["category"] = PREFERENCE  # shown by kind (context.traits)
    return FactInput(
        agent_id=agent_id, content=content, derived_from=derived_from, metadata=metadata,
        **known,
    )  # fmt: skip


def _calls(results: Sequence[Any]) -> list[Any]:
    return [r for r in results if r.tool_name.casefold() == REMEMBER_TOOL and not r.is_error]
