"""The SQL of import: whether an agent already has rows, and the rows written."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import exists, select
from sqlalchemy.exc import DataError, IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from memory_kernel.errors import ValidationError
from memory_kernel.restore.policy import BY_NAME

__all__ = ["has_rows", "insert"]


async def has_rows(conn: AsyncConnection, agent_id: str) -> bool:
    """Whether the agent has a row in any table an import writes."""
    for table in BY_NAME.values():
        if await conn.scalar(select(exists().where(table.c.agent_id == agent_id))):
            return True
    return False


async def insert(conn: AsyncConnection, table: str, rows: Sequence[Mapping[str, Any]]) -> None:
    """Write ``rows`` into ``table`` (one statement per shape of row); a row the store's
    constraints refuse (an unknown status, a duplicate id) is a ``ValidationError``."""
    shapes: dict[tuple[str, ...], list[Mapping[str, Any]]] = {}
    for row in rows:
        shapes.setdefault(tuple(sorted(row)), []).append(row)
    for same in shapes.values():
        try:
            await conn.execute(BY_NAME[table].insert(), same)
        except (IntegrityError, DataError) as exc:
            raise ValidationError(f"{table}: the store refused a row: {exc.orig}") from exc
