"""The ``record_decision`` tool: its name, the arguments ``post_turn`` reads, its JSON schema.

One module holds all three so the schema the model is shown (``kernel.tool_schemas()``) and
the arguments ``cognitive.hooks.explicit_decisions`` accepts cannot drift apart: both are
built from :data:`RECORD_DECISION_FIELDS`, and the types and bounds are those
``DecisionInput`` validates.
"""

from __future__ import annotations

from typing import Any

from memory_kernel.models.decisions import PLACEHOLDER_CONFIDENCE
from memory_kernel.models.enums import Stakes

__all__ = [
    "RECORD_DECISION_FIELDS",
    "RECORD_DECISION_OPTIONAL",
    "RECORD_DECISION_TOOL",
    "record_decision_schema",
]

RECORD_DECISION_TOOL = "record_decision"
#: The arguments post_turn copies from a ``record_decision`` tool result into a DecisionInput
#: (``description`` is required; ids, frame and episode come from the turn, never the model).
RECORD_DECISION_OPTIONAL = ("reasoning", "confidence", "stakes", "category")
RECORD_DECISION_FIELDS = ("description", *RECORD_DECISION_OPTIONAL)

_PROPERTIES: dict[str, dict[str, Any]] = {
    "description": {
        "type": "string",
        "minLength": 1,
        "description": (
            "The decision itself, as one statement: what was chosen (and, ideally, over what)."
        ),
    },
    "reasoning": {
        "type": "string",
        "description": "Why: the facts, constraints or trade-offs behind the decision.",
    },
    "confidence": {
        "type": "number",
        "minimum": 0.0,
        "maximum": 1.0,
        "default": PLACEHOLDER_CONFIDENCE,
        "description": (
            "How sure you are, from 0 to 1. Only decisions above 0.5 are brought back into "
            "later prompts automatically; the default 0.5 means not weighed."
        ),
    },
    "stakes": {
        "type": "string",
        "enum": [s.value for s in Stakes],
        "default": Stakes.MEDIUM.value,
        "description": "How much depends on the decision.",
    },
    "category": {
        "type": "string",
        "description": "A free-form label to group decisions by (e.g. architecture, process).",
    },
}


def record_decision_schema() -> dict[str, Any]:
    """The tool in the common function-calling shape (``{"type": "function", "function":
    {"name", "description", "parameters"}}``); the host supplies agent and session."""
    return {
        "type": "function",
        "function": {
            "name": RECORD_DECISION_TOOL,
            "description": (
                "Record a decision you made, so you remember it in later conversations. Use "
                "it for real choices (a design, a plan, a trade-off), not for status updates "
                "or reports of finished work."
            ),
            "parameters": {
                "type": "object",
                "properties": {name: dict(_PROPERTIES[name]) for name in RECORD_DECISION_FIELDS},
                "required": ["description"],
                "additionalProperties": False,
            },
        },
    }
