"""The per-agent vector search primitive every part uses (facts, episodes, decisions).

Why it is complete: a global HNSW index filtered by ``agent_id`` scans neighbours of every
agent and post-filters, returning fewer rows than asked for. Here the tables are partitioned
by agent (``partitions.py``): the query names one agent, Postgres prunes to that agent's
partition, and there the scan is either exact (the shared default partition, small agents)
or an HNSW index that holds only this agent's searchable rows. Both return ``k`` rows when
``k`` exist. The ``searchable`` predicate is written literally (not as a bound parameter) so
the planner can prove it implies the partial index's predicate.

Facts and episodes are searched in two *tiers* (:func:`tiers`): rows already in the HNSW
index, and rows written since, staged outside it until the indexer moves them in; each
tier gives its own top ``k`` and the two are merged. A write thus never waits for an HNSW
insert, and the search stays complete.

"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Integer,
    Row,
    Select,
    Table,
    Text,
    bindparam,
    select,
    union_all,
)
from sqlalchemy import text as sql_text
from sqlalchemy.ext.asyncio import AsyncConnection

from memory_kernel.vectors import Vector

__all__ = [
    "SEARCHABLE",
    "STAGED_TABLES",
    "AnyRow",
    "hnsw_predicate",
    "knn_select",
    "knn_sql",
    "knn_statement",
    "nearest",
    "tiers",
]

AnyRow = Row[*tuple[Any, ...]]

#: Which rows take part in vector search, per table.
SEARCHABLE: dict[str, str] = {
    "facts": "status = 'active' AND embedding IS NOT NULL",
    "episodes": "admission = 'active' AND embedding IS NOT NULL",
    "decisions": "active AND embedding IS NOT NULL",
    "turns": "embedding IS NOT NULL",
}

#: Tables whose new rows are *staged*: written with ``indexed = false``, outside the agent
#: partition's HNSW index, and searched exactly until the indexer (``storage.indexer``)
#: moves them in. An HNSW insert is the dearest write of the store; staging takes
#: it off ``learn`` and episode ``end`` (the staged rows of an agent are few and a partial
#: btree finds them). Turns are written on every ``post_turn``: staged too. Decisions are
#: few and written rarely: indexed at once.
STAGED_TABLES = ("facts", "episodes", "turns")


def tiers(table: str) -> tuple[str, ...]:
    """The predicates of ``table``'s search tiers, which together are exactly its
    searchable rows: the HNSW-indexed rows first, then the staged ones."""
    searchable = SEARCHABLE[table]
    if table not in STAGED_TABLES:
        return (searchable,)
    return (f"{searchable} AND indexed", f"{searchable} AND NOT indexed")


def hnsw_predicate(table: str) -> str:
    """The predicate of an agent partition's HNSW index: the first tier."""
    return tiers(table)[0]


def knn_sql(table: str, *, select: str, vector: str, agent: str, k: str, where: str = "") -> str:
    """A complete per-agent kNN over every tier of ``table`` as one query (usable inside a
    LATERAL): each tier's own top ``k`` — by the HNSW index, or exactly over the staged
    rows — merged by ``distance``. The arguments are SQL fragments: the selected columns,
    the query vector, the agent and ``k`` (placeholders or outer columns) and extra
    ``AND`` conditions; each tier's predicate is literal so the planner can prove the
    partial indexes apply."""
    # Fragments come from the kernel's own code (constants, $n placeholders), never values.
    parts = [
        f"(SELECT {select}, embedding <=> {vector} AS distance FROM {table}"  # noqa: S608
        f" WHERE agent_id = {agent} AND {tier}{where}"
        f" ORDER BY embedding <=> {vector} LIMIT {k})"
        for tier in tiers(table)
    ]
    if len(parts) == 1:
        return parts[0][1:-1]
    merged = " UNION ALL ".join(parts)
    return f"SELECT * FROM ({merged}) AS tiers ORDER BY distance LIMIT {k}"  # noqa: S608


def knn_select(
    table: Table,
    columns: Sequence[Any],
    where: Sequence[ColumnElement[bool]],
    vector: Any,
    k: Any,
) -> Select[Any]:
    """:func:`knn_sql` as a SQLAlchemy statement (``vector``/``k`` values or bind
    parameters; ``where`` includes the agent condition)."""
    distance = table.c.embedding.cosine_distance(vector).label("distance")
    branches = [
        select(*columns, distance)
        .where(*where, sql_text(tier))
        .order_by(table.c.embedding.cosine_distance(vector))
        .limit(k)
        for tier in tiers(table.name)
    ]
    if len(branches) == 1:
        return branches[0]
    merged = union_all(*branches).subquery("tiers")
    return select(merged).order_by(merged.c.distance).limit(k)


# Statements of nearest() by shape: the ids of the table, the columns and the filters, with
# those objects (kept alive with the statement, so no other object takes their ids).
_SHAPES: dict[tuple[int, ...], tuple[Select[Any], tuple[Any, ...]]] = {}
_MAX_SHAPES = 256


@cache
def _plain_columns(table: Table) -> tuple[Any, ...]:
    return tuple(c for c in table.c if c.name not in ("embedding", "search_tsv"))


def knn_statement(
    table: Table, columns: Sequence[Any], where: Sequence[ColumnElement[bool]]
) -> Select[Any]:
    """:func:`knn_select` with ``:agent``, ``:vector`` and ``:k`` bound, built once per
    shape: the same ``columns`` and ``where`` objects (values in them as bind parameters)
    give the same statement, its cache key computed once."""
    key = (id(table), *map(id, columns), 0, *map(id, where))
    found = _SHAPES.get(key)
    if found is None:
        if len(_SHAPES) >= _MAX_SHAPES:  # filters built per call: bounded, just not reused
            del _SHAPES[next(iter(_SHAPES))]
        agent = table.c.agent_id == bindparam("agent", type_=Text)
        vector = bindparam("vector", type_=table.c.embedding.type)
        stmt = knn_select(table, columns, [agent, *where], vector, bindparam("k", type_=Integer))
        found = _SHAPES[key] = (stmt, (table, tuple(columns), tuple(where)))
    return found[0]


async def nearest(
    conn: AsyncConnection,
    table: Table,
    *,
    agent_id: str,
    vector: Vector,
    k: int,
    where: Sequence[ColumnElement[bool]] = (),
    columns: Sequence[Any] | None = None,
    params: Mapping[str, Any] | None = None,
) -> Sequence[AnyRow]:
    """The ``k`` searchable rows of ``agent_id`` nearest to ``vector`` by cosine distance.

    Each row carries the requested ``columns`` (default: all but the vector and the tsvector)
    plus ``distance`` (0 = same direction, 2 = opposite); ``similarity`` is ``1 - distance``.
    ``where``: extra filters, best the same objects on every call with their values as bind
    parameters (given in ``params``), so the statement is built once (:func:`knn_statement`).
    """
    if k <= 0:
        return []
    stmt = knn_statement(table, _plain_columns(table) if columns is None else columns, where)
    values = {**(params or {}), "agent": agent_id, "vector": vector, "k": k}
    rows: Sequence[AnyRow] = (await conn.execute(stmt, values)).all()
    return rows
