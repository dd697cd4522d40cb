"""DSN handling."""

from __future__ import annotations

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from memory_kernel.errors import ConfigError

__all__ = ["normalise_dsn", "redact_dsn"]


def normalise_dsn(dsn: str) -> str:
    """Accept ``postgresql://`` / ``postgres://`` and return the asyncpg SQLAlchemy URL."""
    try:
        url = make_url(dsn.replace("postgres://", "postgresql://", 1))
    except ArgumentError as exc:
        raise ConfigError(f"not a database URL: {redact_dsn(dsn)!r}") from exc
    if url.get_backend_name() != "postgresql":
        raise ConfigError(f"memory-kernel needs PostgreSQL, got {url.get_backend_name()!r}")
    return url.set(drivername="postgresql+asyncpg").render_as_string(hide_password=False)


def redact_dsn(dsn: str) -> str:
    """The DSN without its password, for messages and logs."""
    try:
        return make_url(dsn).render_as_string(hide_password=True)
    except ArgumentError:
        return "<unparseable DSN>"
