"""The active recall tool: ``search_memory`` and its JSON function schema.

Unlike passive recall, the agent asked: the query is embedded and searched right away
(blocking), low-confidence memories (> 0.3 instead of > 0.5) are allowed, and the results
are meant for the privileged ``TOOL`` budget tier.
"""

from __future__ import annotations

from typing import Any

from memory_kernel.brain.tool import record_decision_schema
from memory_kernel.context.recaller import Recaller
from memory_kernel.erasure.tool import forget_schema
from memory_kernel.errors import ValidationError
from memory_kernel.heart.facts.tool import remember_schema
from memory_kernel.models.context import MemoryHit, MemorySource, SearchType
from memory_kernel.validation import check_agent_id, check_text

__all__ = ["MAX_LIMIT", "SEARCH_MEMORY", "search_memory", "tool_schemas"]

SEARCH_MEMORY = "search_memory"
MAX_LIMIT = 50
_MAX_QUERY_BYTES = 16 * 1024
_SOURCES = {
    SearchType.FACTS: (MemorySource.FACT,),
    SearchType.EPISODES: (MemorySource.EPISODE,),
    SearchType.BOTH: (MemorySource.FACT, MemorySource.EPISODE),
    SearchType.TURNS: (MemorySource.TURN,),
    SearchType.ALL: (MemorySource.FACT, MemorySource.EPISODE, MemorySource.TURN),
}


def _search_type(value: SearchType | str) -> SearchType:
    try:
        return SearchType(value)
    except ValueError as exc:
        choices = ", ".join(t.value for t in SearchType)
        raise ValidationError(f"search_type must be one of {choices}, got {value!r}") from exc


async def search_memory(
    recaller: Recaller,
    *,
    agent_id: str,
    query: str,
    search_type: SearchType | str = SearchType.BOTH,
    limit: int = 5,
    min_confidence: float = 0.3,
) -> list[MemoryHit]:
    """Facts and/or episodes of ``agent_id`` for ``query``, best first, one per cluster."""
    check_agent_id(agent_id)
    check_text(query, field="query", max_bytes=_MAX_QUERY_BYTES)
    kind = _search_type(search_type)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise ValidationError(f"limit must be an integer between 1 and {MAX_LIMIT}")
    vector = await recaller.embed_query(query)
    result = await recaller.recall_many(
        _SOURCES[kind],
        agent_id=agent_id,
        query=query,
        vector=vector,
        limit=limit,
        min_confidence=min_confidence,
    )
    return result.hits


def tool_schemas(*, forget: bool = False) -> list[dict[str, Any]]:
    """The tools the agent can call, in the common function-calling shape
    (``{"type": "function", "function": {"name", "description", "parameters"}}``):
    ``search_memory``, ``record_decision`` and ``remember`` (whose calls go back through
    ``post_turn``), and with ``forget`` also ``forget_memory`` (``erasure.tool``).
    The host supplies ``agent_id`` (and the turn) itself; the model never chooses them."""
    return [
        {
            "type": "function",
            "function": {
                "name": SEARCH_MEMORY,
                "description": (
                    "Search your long-term memory: facts you learned, episodes you took "
                    "part in and what was said in past conversations. Use it when you need "
                    "something that is not in the context, e.g. what the user said about a "
                    "topic weeks ago."
                ),
                "parameters": {
                    "type": "object",
                    "properties": {
                        "query": {
                            "type": "string",
                            "description": "What to look for, in natural language.",
                        },
                        "search_type": {
                            "type": "string",
                            "enum": [t.value for t in SearchType],
                            "default": SearchType.BOTH.value,
                            "description": (
                                "Search facts, episodes, both, the conversation's past "
                                "turns, or all of them."
                            ),
                        },
                        "limit": {
                            "type": "integer",
                            "minimum": 1,
                            "maximum": MAX_LIMIT,
                            "default": 5,
                            "description": "Most memories to return.",
                        },
                    },
                    "required": ["query"],
                    "additionalProperties": False,
                },
            },
        },
        record_decision_schema(),
        remember_schema(),
        *([forget_schema()] if forget else []),
    ]
