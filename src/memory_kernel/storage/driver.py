"""Hot-path statements on the driver connection, under the same transaction and errors.

On this project's measurements a round trip to a warm server costs about 0.1 ms when the
connection is busy and 0.5-1 ms after the client spent a millisecond in Python; SQLAlchemy's
statement machinery (cache keys, bind/result processing, greenlet hops) added 0.6-0.8 ms per
statement on top (``benchmarks/learn.py``, ``benchmarks/search.py``). The write paths that
run on every turn (``learn``, episode ``start``/``end``) and the search primitive therefore
send their fixed SQL texts straight to asyncpg on the connection the unit of work already
holds: same transaction, same error mapping (``storage.errors`` maps asyncpg's errors too),
same values (a ``text()`` statement's parameters go to the driver unprocessed anyway).

``Database.lean_transaction`` is the unit of work of those paths: ``BEGIN`` travels with
the statements that must open it (a lock), in one round trip, and ``COMMIT`` ends it.

Listeners stay informed: every driver statement fires SQLAlchemy's ``before_cursor_execute``
and ``after_cursor_execute`` events on the engine (with ``cursor`` and ``context`` ``None``),
and the lean unit of work fires ``commit`` — so tracing, statement counting and the fault
tests that kill the server before the Nth statement see these paths like any other.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, cast

from sqlalchemy import BindParameter, Executable, Row, TextClause
from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.ext.asyncio import AsyncConnection

__all__ = [
    "AnyRow",
    "DriverRow",
    "abandon",
    "adapter",
    "as_rows",
    "core",
    "driver",
    "execute",
    "fetch",
    "held",
    "positional",
    "run",
    "simple",
]

AnyRow = Row[*tuple[Any, ...]]

# ``:name`` placeholders, not ``::type`` casts (the character before must not be a colon).
_NAMED = re.compile(r"(?<![:\w]):([A-Za-z_][A-Za-z0-9_]*)")


class DriverRow:
    """A driver record with the parts of SQLAlchemy's ``Row`` interface callers use:
    attribute access by column name and ``_mapping``."""

    __slots__ = ("_mapping",)

    def __init__(self, record: Mapping[str, Any]) -> None:
        self._mapping = record

    def __getattr__(self, name: str) -> Any:
        try:
            return self._mapping[name]
        except KeyError:
            raise AttributeError(name) from None

    def __repr__(self) -> str:
        return f"DriverRow({dict(self._mapping)!r})"


@lru_cache(maxsize=1024)
def positional(sql: str) -> tuple[str, tuple[str, ...]]:
    """``sql`` with ``:name`` placeholders as asyncpg's ``$n``, and the names in ``$n`` order
    (a name used twice is one parameter)."""
    names: list[str] = []

    def number(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in names:
            names.append(name)
        return f"${names.index(name) + 1}"

    return _NAMED.sub(number, sql), tuple(names)


def held(conn: AsyncConnection) -> Connection | None:
    """``conn``'s connection if SQLAlchemy still holds it open and valid (no I/O)."""
    sync = conn.sync_connection
    return None if sync is None or sync.closed or sync.invalidated else sync


async def _fairy(conn: AsyncConnection) -> Any:
    sync = held(conn)
    if sync is not None:
        return sync.connection  # live: no I/O, so no greenlet hop (one per statement)
    return await conn.get_raw_connection()  # may reconnect


async def adapter(conn: AsyncConnection) -> Any:
    """SQLAlchemy's adapter of the asyncpg connection under ``conn`` (its ``autocommit``
    decides whether SQLAlchemy sends ``BEGIN`` before its own statements)."""
    return (await _fairy(conn)).dbapi_connection


async def driver(conn: AsyncConnection) -> Any:
    """The asyncpg connection under ``conn``, inside ``conn``'s transaction if it has one.

    SQLAlchemy's asyncpg adapter sends ``BEGIN`` lazily, with the first statement *it*
    runs: a transaction the caller began (``Database.transaction``) whose first statement
    comes here would otherwise run in autocommit and outlive the caller's rollback."""
    fairy = await _fairy(conn)
    wrapped: Any = fairy.dbapi_connection
    if conn.in_transaction() and not wrapped.autocommit and wrapped._transaction is None:
        await wrapped._start_transaction()
    raw = fairy.driver_connection
    assert raw is not None  # a connection checked out of the pool is open
    return raw


@contextmanager
def _announced(conn: AsyncConnection, sql: str, args: tuple[Any, ...]) -> Iterator[None]:
    """Fire the engine's before/after cursor events around a driver statement."""
    sync, dispatch = conn.sync_connection, conn.sync_engine.dispatch
    if dispatch.before_cursor_execute:
        dispatch.before_cursor_execute(sync, None, sql, args, None, False)
    yield
    if dispatch.after_cursor_execute:
        dispatch.after_cursor_execute(sync, None, sql, args, None, False)


async def run(conn: AsyncConnection, sql: str, *args: Any) -> list[Any]:
    """Run ``sql`` (``$n`` placeholders) on the driver; the driver's records."""
    raw = await driver(conn)
    with _announced(conn, sql, args):
        records: list[Any] = await raw.fetch(sql, *args)
    return records


async def fetch(
    conn: AsyncConnection, statement: TextClause | str, params: Mapping[str, Any]
) -> list[AnyRow]:
    """Run a ``text()`` statement (named parameters) on the driver; the rows are
    ``DriverRow`` s, which answer like SQLAlchemy's rows (attributes, ``_mapping``)."""
    sql, names = positional(statement.text if isinstance(statement, TextClause) else statement)
    return as_rows(await run(conn, sql, *[params[n] for n in names]))


def as_rows(records: list[Any]) -> list[AnyRow]:
    """Driver records as rows that answer like SQLAlchemy's."""
    return cast(list[AnyRow], [DriverRow(r) for r in records])


@dataclass(frozen=True, slots=True)
class _Slot:
    """One ``$n`` of a compiled statement: its bound parameter and the type's processor."""

    name: str
    bind: BindParameter[Any]
    process: Callable[[Any], Any] | None


@dataclass(frozen=True, slots=True)
class _Compiled:
    sql: str
    slots: tuple[_Slot, ...]

    def args(self, params: Mapping[str, Any]) -> list[Any]:
        values = []
        for slot in self.slots:
            if slot.name in params:
                value = params[slot.name]
            elif slot.bind.callable is not None:
                value = slot.bind.callable()
            elif slot.bind.required:
                raise KeyError(f"no value for the bound parameter {slot.name!r}")
            else:
                value = slot.bind.value  # a literal of the statement
            values.append(value if slot.process is None else slot.process(value))
        return values


# Statements compiled for the driver, per statement object: only prebuilt statements
# (module constants, shapes cached by their builders) are meant for ``core``.
_COMPILED: weakref.WeakKeyDictionary[Executable, _Compiled] = weakref.WeakKeyDictionary()


def _compile(statement: Executable, dialect: Dialect) -> _Compiled:
    found = _COMPILED.get(statement)
    if found is None:
        compiled = statement.compile(dialect=dialect)  # type: ignore[attr-defined]
        slots = []
        for name in compiled.positiontup or ():
            bind = compiled.binds[name]
            process = bind.type.dialect_impl(dialect).bind_processor(dialect)
            slots.append(_Slot(name, bind, process))
        found = _COMPILED[statement] = _Compiled(compiled.string, tuple(slots))
    return found


async def core(
    conn: AsyncConnection, statement: Executable, params: Mapping[str, Any]
) -> list[AnyRow]:
    """Run a prebuilt SQLAlchemy Core statement on the driver: compiled once for the
    connection's dialect (``$n`` placeholders, the types' bind processors applied to the
    values, so a JSONB or vector parameter travels as SQLAlchemy would send it). The rows
    are ``DriverRow`` s; the driver's codecs already decode every column type used here."""
    compiled = _compile(statement, conn.dialect)
    return as_rows(await run(conn, compiled.sql, *compiled.args(params)))


async def simple(conn: AsyncConnection, sql: str) -> None:
    """Run constant ``sql`` (possibly several statements, no parameters) in the simple
    protocol: one round trip whatever the number of statements."""
    raw = await driver(conn)
    with _announced(conn, sql, ()):
        await raw.execute(sql)


async def execute(conn: AsyncConnection, sql: str) -> None:
    """Transaction control (``BEGIN``, ``COMMIT``): not a statement listeners count."""
    await (await driver(conn)).execute(sql)


async def abandon(conn: AsyncConnection) -> None:
    """Roll back; if even that fails (a broken or cancelled connection), throw the
    connection away so the pool never hands out one stuck in a transaction."""
    try:
        raw = await driver(conn)
        # Always: a call cancelled mid-flight leaves the server in the transaction before
        # the driver has read that status (``is_in_transaction`` would still say no).
        # ROLLBACK outside a transaction is only a warning.
        if not raw.is_closed():
            await raw.execute("ROLLBACK")
    except Exception:
        await _discard(conn)  # the caller's exception is the one that matters
    except BaseException:
        await _discard(conn)
        raise


async def _discard(conn: AsyncConnection) -> None:
    # SQLAlchemy may have invalidated it already (an interrupted statement).
    with suppress(Exception):
        if not conn.invalidated:
            await conn.invalidate()
