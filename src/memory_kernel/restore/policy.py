"""The rules of import, pure: which records an export may hold, and each one as a row the
store takes.

An import takes what ``export_agent`` gives: ``{"table": name, "row": {column: value}}``
records of one agent (facts, episodes, decisions, turns, the audit trail, the turns waiting
for fact extraction), ids and times as strings. Every column is checked against its table
and converted to its type; a column the store makes itself (the full-text vector, the
embedding, the index flag) is left to it: the embedding is made again by the importing
kernel's embedder, since an export does not say which embedder made the vectors it may
hold; a queued turn comes unclaimed (a claim is a lease of the source's drain). Anything
else is a ``ValidationError``.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ARRAY, Boolean, Column, DateTime, Float, Integer, SmallInteger, Table, Text
from sqlalchemy.dialects.postgresql import JSONB, UUID

from memory_kernel.errors import ValidationError
from memory_kernel.export.store import TABLES
from memory_kernel.heart.turns.policy import vector_input
from memory_kernel.models.enums import FactStatus
from memory_kernel.models.turns import MAX_TURN_BYTES
from memory_kernel.storage.tables import EMBEDDED_TEXT
from memory_kernel.validation import check_agent_id

__all__ = ["BY_NAME", "MAX_VALUE_BYTES", "Row", "parse"]

BY_NAME: dict[str, Table] = {t.name: t for t in TABLES}
#: The largest text or JSON value a memory holds (a turn's text).
MAX_VALUE_BYTES = MAX_TURN_BYTES
#: Made by the store (or, ``claim``, by a drain of the store), never taken from a record.
_STORE_MADE = frozenset({"search_tsv", "embedding", "indexed", "claim"})


@dataclass(frozen=True, slots=True)
class Row:
    """One record as the store takes it: its table, its values (``agent_id`` still the
    source's), and the text to embed for it (``None``: it gets no vector)."""

    table: str
    values: dict[str, Any]
    text: str | None

    @property
    def agent_id(self) -> str:
        return str(self.values["agent_id"])


def parse(record: object, n: int) -> Row:
    """Record number ``n`` (from 1, for the error message) as a ``Row``."""
    where = f"record {n}"
    if not isinstance(record, Mapping) or set(record) != {"table", "row"}:
        raise ValidationError(f"{where}: expected {{'table': …, 'row': {{…}}}}")
    table = BY_NAME.get(record["table"]) if isinstance(record["table"], str) else None
    if table is None:
        raise ValidationError(f"{where}: table must be one of {sorted(BY_NAME)}")
    row = record["row"]
    if not isinstance(row, Mapping):
        raise ValidationError(f"{where}: row must be an object")
    unknown = set(row) - {c.name for c in table.c}
    if unknown:
        raise ValidationError(f"{where}: {table.name} has no column {sorted(unknown)}")
    values: dict[str, Any] = {}
    for column in table.c:
        if column.name in _STORE_MADE or column.name not in row:
            if column.name not in _STORE_MADE and _required(column):
                raise ValidationError(f"{where}: {table.name}.{column.name} is missing")
            continue
        try:
            values[column.name] = _value(column, row[column.name])
        except (TypeError, ValueError) as exc:
            raise ValidationError(f"{where}: {table.name}.{column.name}: {exc}") from exc
    check_agent_id(values["agent_id"])
    return Row(table.name, values, _text(table.name, values))


def _required(column: Column[Any]) -> bool:
    return not column.nullable and column.server_default is None


def _text(table: str, values: Mapping[str, Any]) -> str | None:
    field = EMBEDDED_TEXT.get(table)
    if field is None:
        return None
    if table == "facts" and values.get("status") == FactStatus.PENDING_EMBED.value:
        return None  # the embedding worker takes it, as it would have in the source store
    return vector_input(table, str(values[field]))


def _value(column: Column[Any], value: object) -> object:
    if value is None:
        if not column.nullable:
            raise ValueError("must not be null")
        return None
    kind = column.type
    if isinstance(kind, ARRAY) and isinstance(kind.item_type, UUID):
        if not isinstance(value, list):
            raise ValueError("must be a list")
        return [_uuid(v) for v in value]
    for types, convert in _CONVERTERS:
        if isinstance(kind, types):
            return convert(value)
    raise ValueError(f"no import for the column type {kind}")  # a new column type: add it


def _uuid(value: object) -> uuid.UUID:
    if not isinstance(value, str):
        raise ValueError("must be a UUID string")
    return uuid.UUID(value)


def _time(value: object) -> datetime:
    if not isinstance(value, str):
        raise ValueError("must be an ISO 8601 string")
    found = datetime.fromisoformat(value)
    if found.tzinfo is None:
        raise ValueError("must have a UTC offset")
    return found


def _text_value(value: object) -> str:
    if not isinstance(value, str) or "\x00" in value:
        raise ValueError("must be a string without NUL bytes")
    if len(value.encode("utf-8", "surrogatepass")) > MAX_VALUE_BYTES:
        raise ValueError(f"is longer than any memory holds ({MAX_VALUE_BYTES} bytes)")
    return value


def _number(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError("must be a finite number")
    return float(value)


def _integer(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError("must be an integer")
    return value


def _boolean(value: object) -> bool:
    if not isinstance(value, bool):
        raise ValueError("must be true or false")
    return value


def _json(value: object) -> object:
    if not isinstance(value, dict | list):
        raise ValueError("must be a JSON object or array")
    if len(json.dumps(value, default=str).encode()) > MAX_VALUE_BYTES:
        raise ValueError(f"is larger than any memory holds ({MAX_VALUE_BYTES} bytes)")
    return value


# Most specific first: SmallInteger is an Integer.
_CONVERTERS: tuple[tuple[type | tuple[type, ...], Callable[[object], object]], ...] = (
    (UUID, _uuid),
    (DateTime, _time),
    (JSONB, _json),
    ((SmallInteger, Integer), _integer),
    (Float, _number),
    (Boolean, _boolean),
    (Text, _text_value),
)
