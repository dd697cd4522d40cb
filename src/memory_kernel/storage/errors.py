"""Database errors mapped once into memory-kernel's own (advanced-alchemy's approach)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from asyncpg.exceptions import InterfaceError as DriverInterfaceError
from asyncpg.exceptions import InternalClientError, PostgresError
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError, SQLAlchemyError

from memory_kernel.errors import (
    ConflictError,
    ConnectionFailedError,
    MemoryKernelError,
    StorageError,
    ValidationError,
)

__all__ = ["map_db_error", "translate_db_errors"]

# SQLSTATE classes: https://www.postgresql.org/docs/current/errcodes-appendix.html
_CONNECTION_STATES = ("08", "57P01", "57P02", "57P03", "53300", "28")
_CONFLICT_STATES = ("40001", "40P01", "23505", "55P03")
_BAD_INPUT_STATES = ("22", "23514", "23502")
# asyncpg's own errors escape SQLAlchemy's wrapping when raised in a connect hook (the
# pgvector codec registration); InternalClientError means a connection left mid-operation.
_RAW_ERRORS = (
    SQLAlchemyError,
    DBAPIError,
    OSError,
    PostgresError,
    DriverInterfaceError,
    InternalClientError,
)


# A connection that cannot be used any more: the socket is gone, or asyncpg's protocol was
# left in the middle of an operation ("cannot switch to state 15; another operation (2) is
# in progress": a pooled connection a server crash interrupted mid-statement).
_CONNECTION_ERRORS = (
    ConnectionError,
    OSError,
    InterfaceError,
    DriverInterfaceError,
    InternalClientError,
)


def _chain(exc: BaseException) -> tuple[BaseException | None, ...]:
    """``exc`` and the driver's error under it: SQLAlchemy wraps the dialect's adapter
    (``orig``), which is raised ``from`` asyncpg's exception."""
    orig = getattr(exc, "orig", None)
    return (exc, orig, getattr(orig, "__cause__", None), exc.__cause__)


def _sqlstate(exc: BaseException) -> str | None:
    for candidate in _chain(exc):
        code = getattr(candidate, "sqlstate", None) or getattr(candidate, "pgcode", None)
        if isinstance(code, str):
            return code
    return None


def map_db_error(exc: BaseException) -> MemoryKernelError:
    """The library error for a driver/SQLAlchemy error (the caller chains it with ``from``)."""
    if isinstance(exc, MemoryKernelError):
        return exc
    state = _sqlstate(exc) or ""
    message = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0][:500]
    # (A driver error that is also a ValueError is a parameter asyncpg could not encode.)
    if state.startswith(_CONNECTION_STATES) or any(
        isinstance(e, _CONNECTION_ERRORS) and not isinstance(e, ValueError) for e in _chain(exc)
    ):
        return ConnectionFailedError(f"database connection failed: {message}")
    if isinstance(exc, OperationalError) and not state:
        return ConnectionFailedError(f"database connection failed: {message}")
    if state.startswith(_CONFLICT_STATES):
        return ConflictError(f"concurrent change, retry: {message}")
    if state.startswith(_BAD_INPUT_STATES):
        return ValidationError(f"the database rejected the input: {message}")
    return StorageError(f"database error ({state or type(exc).__name__}): {message}")


@contextmanager
def translate_db_errors() -> Iterator[None]:
    try:
        yield
    except _RAW_ERRORS as exc:
        raise map_db_error(exc) from exc
