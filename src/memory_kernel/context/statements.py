"""The two statements of hybrid recall (vector top-k, full-text top-k), built once per
shape and executed with bound parameters.

A shape is a table, its columns and filters, and how many weighted query words score a row;
everything else — the agent, the query vector, ``k``, the confidence floor, the session left
out, each word's tsquery and weight — is a bind parameter (:func:`params`). Building the
statement and its cache key on every call was event-loop time on every recall; the caller
keeps the statements (``retrieval._statements``) and SQLAlchemy's compiled cache and
asyncpg's prepared statements see the same statement object each time.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Float,
    Integer,
    Select,
    Table,
    Text,
    bindparam,
    case,
    cast,
    literal,
    select,
)
from sqlalchemy.dialects.postgresql import TSQUERY

from memory_kernel.storage.search import knn_select
from memory_kernel.vectors import Vector

__all__ = ["agent_is", "lexical_score", "params", "text_search", "vector_search"]


def agent_is(table: Table) -> ColumnElement[bool]:
    return table.c.agent_id == bindparam("agent", type_=Text)


def lexical_score(table: Table, terms: int) -> ColumnElement[float]:
    """A row's lexical score: the sum of the weights (``:w0``…) of the query words
    (``:t0``…, tsqueries as text) it contains."""
    tsv = table.c.search_tsv
    lexical: Any = literal(0.0, Float)
    for i in range(terms):
        matches = tsv.bool_op("@@")(cast(bindparam(f"t{i}", type_=Text), TSQUERY))
        lexical = lexical + case((matches, bindparam(f"w{i}", type_=Float)), else_=0.0)
    return cast(lexical, Float)


def vector_search(
    table: Table, columns: Sequence[Any], filters: Sequence[ColumnElement[bool]], terms: int
) -> Select[Any]:
    """The ``:k`` searchable rows nearest ``:vector`` (``storage.search.knn_select``), with
    their lexical score when ``terms`` words weigh (``lexical``)."""
    extra = [lexical_score(table, terms).label("lexical")] if terms else []
    vector = bindparam("vector", type_=table.c.embedding.type)
    where = [agent_is(table), *filters]
    return knn_select(table, [*columns, *extra], where, vector, bindparam("k", type_=Integer))


def text_search(
    table: Table,
    columns: Sequence[Any],
    filters: Sequence[ColumnElement[bool]],
    terms: int,
) -> Select[Any]:
    """The ``:k`` rows holding any word of ``:any_word`` (a tsquery as text), best lexical
    score first (``filters``: the full-text side's visibility and the caller's filters)."""
    score = lexical_score(table, terms).label("lexical")
    any_word = cast(bindparam("any_word", type_=Text), TSQUERY)
    return (
        select(*columns, score)
        .where(agent_is(table), *filters, table.c.search_tsv.bool_op("@@")(any_word))
        .order_by(score.desc(), table.c.id)
        .limit(bindparam("k", type_=Integer))
    )


def params(
    *,
    agent_id: str,
    k: int,
    weights: Sequence[tuple[str, float]],
    floor: float,
    session: str | None = None,
    vector: Vector | None = None,
    any_word: str | None = None,
) -> dict[str, Any]:
    """The bind parameters of both statements (``weights``: each word's tsquery as text
    and its weight, in the order the statement's shape was built for)."""
    out: dict[str, Any] = {"agent": agent_id, "k": k, "floor": floor, "session": session}
    if vector is not None:
        out["vector"] = vector
    if any_word is not None:
        out["any_word"] = any_word
    for i, (tsquery, weight) in enumerate(weights):
        out[f"t{i}"], out[f"w{i}"] = tsquery, weight
    return out
