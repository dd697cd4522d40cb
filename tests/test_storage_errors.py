"""``storage.errors.map_db_error``: driver errors as the SQLAlchemy asyncpg dialect wraps
them, mapped to the library's errors."""

from __future__ import annotations

import asyncpg
import pytest
from sqlalchemy.dialects.postgresql.asyncpg import AsyncAdapt_asyncpg_dbapi
from sqlalchemy.exc import DBAPIError, InternalError

from memory_kernel import ConflictError, ConnectionFailedError, StorageError
from memory_kernel.storage.errors import map_db_error


def _wrapped(raw: Exception, adapted: type[Exception], outer: type[DBAPIError]) -> DBAPIError:
    """The chain SQLAlchemy builds: its error, ``orig`` the dialect's adapter of the
    driver's exception, raised ``from`` the driver's exception."""
    orig = adapted(str(raw), raw)
    orig.__cause__ = raw
    error = outer("SELECT 1", {}, orig)
    error.__cause__ = orig
    return error


@pytest.mark.parametrize(
    "message",
    [
        "cannot switch to state 15; another operation (2) is in progress",
        'cannot switch to state 12; protocol is in the "failed" state',
        "not connected",
    ],
)
def test_a_connection_left_half_way_is_a_connection_failure(message: str) -> None:
    """Before: ``StorageError("database error (InternalError): cannot switch to state 15
    ...")``, for a pooled connection a server crash left in the middle of a statement."""
    raw = asyncpg.exceptions.InternalClientError(message)
    error = _wrapped(raw, AsyncAdapt_asyncpg_dbapi.InternalClientError, InternalError)
    mapped = map_db_error(error)
    assert isinstance(mapped, ConnectionFailedError), repr(mapped)
    assert message in str(mapped)


def test_other_internal_errors_stay_storage_errors() -> None:
    raw = asyncpg.exceptions.InternalServerError("XX000: something broke")
    error = _wrapped(raw, AsyncAdapt_asyncpg_dbapi.InternalServerError, InternalError)
    mapped = map_db_error(error)
    assert type(mapped) is StorageError


def test_a_serialisation_failure_is_still_a_conflict() -> None:
    raw = asyncpg.exceptions.SerializationError("could not serialize access")
    error = _wrapped(raw, AsyncAdapt_asyncpg_dbapi.Error, DBAPIError)
    assert isinstance(map_db_error(error), ConflictError)
