"""The per-agent vector search primitive every part uses (facts, episodes, decisions).

Why it is complete: a global HNSW index filtered by ``agent_id`` scans neighbours of every
agent and post-filters, returning fewer rows than asked for. Here the tables are partitioned
by agent (``partitions.py``): the query names one agent, Postgres prunes to that agent's
partition, and there the scan is either exact (the shared default partition, small agents)
or an HNSW index that holds only this agent's searchable rows. Both return ``k`` rows when
``k`` exist. The ``searchable`` predicate is written literally (not as a bound parameter) so
the planner can prove it implies the partial index's predicate.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from sqlalchemy import ColumnElement, Row, Table, select, text
from sqlalchemy.ext.asyncio import AsyncConnection

__all__ = ["SEARCHABLE", "AnyRow", "nearest"]

AnyRow = Row[*tuple[Any, ...]]

#: Which rows take part in vector search, per table — also the predicate of the HNSW indexes.
SEARCHABLE: dict[str, str] = {
    "facts": "status = 'active' AND embedding IS NOT NULL",
    "episodes": "admission = 'active' AND embedding IS NOT NULL",
    "decisions": "active AND embedding IS NOT NULL",
}


async def nearest(
    conn: AsyncConnection,
    table: Table,
    *,
    agent_id: str,
    vector: npt.NDArray[np.float32],
    k: int,
    where: Sequence[ColumnElement[bool]] = (),
    columns: Sequence[Any] | None = None,
) -> Sequence[AnyRow]:
    """The ``k`` searchable rows of ``agent_id`` nearest to ``vector`` by cosine distance.

    Each row carries the requested ``columns`` (default: all but the vector and the tsvector)
    plus ``distance`` (0 = same direction, 2 = opposite); ``similarity`` is ``1 - distance``.
    """
    if k <= 0:
        return []
    if columns is None:
        columns = [c for c in table.c if c.name not in ("embedding", "search_tsv")]
    distance = table.c.embedding.cosine_distance(vector).label("distance")
    stmt = (
        select(*columns, distance)
        .where(table.c.agent_id == agent_id, text(SEARCHABLE[table.name]), *where)
        .order_by(distance)
        .limit(k)
    )
    result = await conn.execute(stmt)
    return result.all()
