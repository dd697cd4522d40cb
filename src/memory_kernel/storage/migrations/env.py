"""Alembic environment, shared by the package (``MemoryKernel.open``/``memory-kernel migrate``)
and developers (``alembic upgrade head`` at the repo root).

The kernel hands over an open connection in ``config.attributes["connection"]``; the command
line builds one from ``sqlalchemy.url``, ``-x dsn=...`` or ``MEMORY_KERNEL_DSN``. The target
schema comes from ``attributes["schema"]``, ``-x schema=...`` or ``MEMORY_KERNEL_SCHEMA``.
"""

from __future__ import annotations

import asyncio
import os

from alembic import context
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import create_async_engine

from memory_kernel.storage.migrate import configure_and_run
from memory_kernel.storage.url import normalise_dsn

config = context.config


def _schema() -> str:
    x_args = context.get_x_argument(as_dictionary=True)
    return str(
        config.attributes.get("schema")
        or x_args.get("schema")
        or os.environ.get("MEMORY_KERNEL_SCHEMA")
        or "memory_kernel"
    )


def _run(connection: Connection) -> None:
    configure_and_run(context, connection, _schema())


async def _run_from_url() -> None:
    x_args = context.get_x_argument(as_dictionary=True)
    url = (
        x_args.get("dsn")
        or os.environ.get("MEMORY_KERNEL_DSN")
        or config.get_main_option("sqlalchemy.url")
    )
    if not url:
        raise SystemExit("give a database: -x dsn=postgresql://... or MEMORY_KERNEL_DSN")
    engine = create_async_engine(normalise_dsn(url))
    try:
        async with engine.connect() as connection:
            await connection.run_sync(_run)
            await connection.commit()
    finally:
        await engine.dispose()


if context.is_offline_mode():
    raise SystemExit("offline (--sql) migrations are not supported; run against a database")

_given = config.attributes.get("connection")
if _given is not None:
    _run(_given)
else:
    asyncio.run(_run_from_url())
