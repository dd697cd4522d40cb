"""The ``forget_memory`` tool: the model erases memories on the user's request.

Offered only when the host asks for it (``kernel.tool_schemas(forget=True)``): erasure cannot
be undone, so a host gives it to a model it trusts to use it only when the user asks ("forget
my old address"). The model takes the ids from ``search_memory`` results, which the host
shows with each hit's id; the host runs ``kernel.forget(agent_id, arguments["memory_ids"])``
itself, like ``search_memory``: the model never chooses the agent.
"""

from __future__ import annotations

from typing import Any

__all__ = ["FORGET_DESCRIPTION", "FORGET_MEMORY", "MAX_TOOL_IDS", "forget_schema"]

FORGET_MEMORY = "forget_memory"
#: What the model is told of the tool (here and by ``memory-kernel mcp``).
FORGET_DESCRIPTION = (
    "Erase memories for good, with what was derived from them. Only when the user asks you "
    "to forget something; find the memories with search_memory first and pass the ids of "
    "those that say it."
)
#: Ids one call of the tool may name (``kernel.forget`` itself takes up to 1,000).
MAX_TOOL_IDS = 50


def forget_schema() -> dict[str, Any]:
    """The tool in the common function-calling shape."""
    return {
        "type": "function",
        "function": {
            "name": FORGET_MEMORY,
            "description": FORGET_DESCRIPTION,
            "parameters": {
                "type": "object",
                "properties": {
                    "memory_ids": {
                        "type": "array",
                        "items": {"type": "string", "format": "uuid"},
                        "minItems": 1,
                        "maxItems": MAX_TOOL_IDS,
                        "description": "The ids of the memories to erase, from search_memory.",
                    },
                },
                "required": ["memory_ids"],
                "additionalProperties": False,
            },
        },
    }
