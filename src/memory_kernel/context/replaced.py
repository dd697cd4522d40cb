"""The older versions of recalled facts (SQL): what each current fact replaced.

A fact superseded by a newer one keeps a pointer to it (``superseded_by``). For the current
facts recall found, one recursive statement walks those pointers backwards (through the
partial ``(agent_id, superseded_by)`` index, at most ``MAX_DEPTH`` versions back) and
returns each older version's text under the current fact it led to. ``context.stale``
then knows which values are no longer current.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

__all__ = ["MAX_DEPTH", "replaced_texts"]

MAX_DEPTH = 5

_CHAIN = text(
    "WITH RECURSIVE chain(id, head, content, depth) AS ("
    " SELECT id, superseded_by, content, 1 FROM facts"
    " WHERE agent_id = :agent AND superseded_by = ANY(:ids)"
    " UNION ALL"
    " SELECT f.id, c.head, f.content, c.depth + 1 FROM facts f JOIN chain c"
    " ON f.agent_id = :agent AND f.superseded_by = c.id WHERE c.depth < :depth"
    ") SELECT head, content FROM chain ORDER BY head, depth"
)


async def replaced_texts(
    conn: AsyncConnection, *, agent_id: str, fact_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, list[str]]:
    """For each of ``fact_ids`` that replaced older versions: their texts, newest first."""
    if not fact_ids:
        return {}
    rows = await conn.execute(
        _CHAIN, {"agent": agent_id, "ids": list(fact_ids), "depth": MAX_DEPTH}
    )
    found: dict[uuid.UUID, list[str]] = {}
    for head, content in rows:
        found.setdefault(head, []).append(str(content))
    return found
