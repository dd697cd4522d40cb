"""Running the Alembic migrations that ship inside the package."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import text
from sqlalchemy.engine import Connection

from memory_kernel.storage import locks

__all__ = [
    "MIGRATIONS_DIR",
    "alembic_config",
    "configure_and_run",
    "current_revision",
    "head_revision",
    "upgrade",
]

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
VERSION_TABLE = "alembic_version"


def alembic_config(*, connection: Connection | None = None, schema: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.attributes["connection"] = connection
    cfg.attributes["schema"] = schema
    return cfg


def configure_and_run(context: Any, connection: Connection, schema: str) -> None:
    """Called from env.py: serialise migrators, point search_path at the schema, migrate."""
    # Two processes opening a fresh store at once must not both create the tables.
    connection.execute(
        text("SELECT pg_advisory_xact_lock(:k)"), {"k": locks.lock_number("mk-migrate", schema)}
    )
    connection.execute(text(f'CREATE SCHEMA IF NOT EXISTS "{schema}"'))
    connection.execute(text(f'SET LOCAL search_path TO "{schema}", public'))
    context.configure(
        connection=connection,
        version_table=VERSION_TABLE,
        version_table_schema=schema,
        transaction_per_migration=False,
    )
    with context.begin_transaction():
        context.run_migrations()


def upgrade(connection: Connection, schema: str, revision: str = "head") -> None:
    command.upgrade(alembic_config(connection=connection, schema=schema), revision)


def downgrade(connection: Connection, schema: str, revision: str = "base") -> None:
    command.downgrade(alembic_config(connection=connection, schema=schema), revision)


def head_revision() -> str:
    head = ScriptDirectory.from_config(alembic_config(schema="memory_kernel")).get_current_head()
    assert head is not None
    return head


def current_revision(connection: Connection, schema: str) -> str | None:
    ctx = MigrationContext.configure(
        connection, opts={"version_table": VERSION_TABLE, "version_table_schema": schema}
    )
    return ctx.get_current_revision()
