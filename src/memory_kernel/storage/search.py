"""The per-agent vector search primitive every part uses (facts, episodes, decisions).

Why it is complete: a global HNSW index filtered by ``agent_id`` scans neighbours of every
agent and post-filters, returning fewer rows than asked for. Here the tables are partitioned
by agent (``partitions.py``): the query names one agent, Postgres prunes to that agent's
partition, and there the scan is either exact (the shared default partition, small agents)
or an HNSW index that holds only this agent's searchable rows. Both return ``k`` rows when
``k`` exist. The ``searchable`` predicate is written literally (not as a bound parameter) so
the planner can prove it implies the partial index's predicate.

Why two execution paths: the database answers a warm per-agent search in about a millisecond,
and SQLAlchemy's statement machinery (building, caching, binding the vector as text,
processing rows) cost as much again per call (benchmarks/search.py). The common shapes —
plain columns, filters comparing a column with a value — are rendered to SQL once per shape
and run on the driver connection with the vector in pgvector's binary form. Anything else
(labels, expressions) goes through SQLAlchemy, with the same semantics.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any, cast

import numpy as np
import numpy.typing as npt
from sqlalchemy import BinaryExpression, BindParameter, Column, ColumnElement, Table, select
from sqlalchemy import text as sql_text
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql import operators

from memory_kernel.storage.driver import AnyRow, DriverRow, run

__all__ = ["SEARCHABLE", "AnyRow", "nearest"]

#: Which rows take part in vector search, per table — also the predicate of the HNSW indexes.
SEARCHABLE: dict[str, str] = {
    "facts": "status = 'active' AND embedding IS NOT NULL",
    "episodes": "admission = 'active' AND embedding IS NOT NULL",
    "decisions": "active AND embedding IS NOT NULL",
}

# Comparison operators the driver path renders itself; any other filter takes SQLAlchemy's.
_OPERATORS: dict[Any, str] = {
    operators.eq: "=",
    operators.ne: "<>",
    operators.gt: ">",
    operators.ge: ">=",
    operators.lt: "<",
    operators.le: "<=",
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
    plain = _plain(table, columns, where)
    if plain is not None:
        names, filters, values = plain
        sql = _driver_sql(table.name, names, filters)
        vec = np.asarray(vector, dtype=np.float32)
        records = await run(conn, sql, agent_id, vec, k, *values)
        # Row-compatible for every caller (attribute access, ``_mapping``).
        return cast(Sequence[AnyRow], [DriverRow(r) for r in records])
    distance = table.c.embedding.cosine_distance(vector).label("distance")
    stmt = (
        select(*columns, distance)
        .where(table.c.agent_id == agent_id, sql_text(SEARCHABLE[table.name]), *where)
        .order_by(distance)
        .limit(k)
    )
    result = await conn.execute(stmt)
    return result.all()


def _plain(
    table: Table, columns: Sequence[Any], where: Sequence[ColumnElement[bool]]
) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...], list[Any]] | None:
    """Column names, ``(column, operator)`` filters and their values when the search uses
    only plain columns of ``table`` and column-vs-value comparisons; otherwise ``None``."""
    names: list[str] = []
    for column in columns:
        if not isinstance(column, Column) or column.table is not table:
            return None
        names.append(column.name)
    filters: list[tuple[str, str]] = []
    values: list[Any] = []
    for clause in where:
        if not isinstance(clause, BinaryExpression):
            return None
        left, right, op = clause.left, clause.right, _OPERATORS.get(clause.operator)
        if op is None or not isinstance(left, Column) or left.table is not table:
            return None
        if not isinstance(right, BindParameter) or right.callable is not None:
            return None
        filters.append((left.name, op))
        values.append(right.value)
    return tuple(names), tuple(filters), values


@lru_cache(maxsize=256)
def _driver_sql(table: str, names: tuple[str, ...], filters: tuple[tuple[str, str], ...]) -> str:
    """The search as SQL text: ``$1`` agent, ``$2`` vector, ``$3`` k, then filter values.

    Names come from the table's own columns and operators from a fixed set, never from input.
    """
    selected = ", ".join(f'"{name}"' for name in names)
    extra = "".join(f' AND "{name}" {op} ${i}' for i, (name, op) in enumerate(filters, 4))
    return (
        f"SELECT {selected}, embedding <=> $2 AS distance FROM {table}"  # noqa: S608
        f" WHERE agent_id = $1 AND {SEARCHABLE[table]}{extra} ORDER BY distance LIMIT $3"
    )
