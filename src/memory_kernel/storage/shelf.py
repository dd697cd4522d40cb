"""Connections kept checked out between leases, so a turn's unit of work skips the pool.

A checkout from SQLAlchemy's pool and its check-in cost 0.16-0.19 ms together (a new
``Connection`` object, pool events, two greenlet hops), on every start, end and learn:
more than the server takes to run a ``BEGIN``. ``Database`` therefore keeps the
connections its leases give back, up to ``pool_size``, and hands out the one used last.

Nothing changes about what a lease gets. Only a clean connection is kept: open, valid,
outside any transaction (a read's implicit one is rolled back, as the pool's check-in
would), with no execution options a caller set (the pool's reset puts those back). One
kept longer than ``max_idle_s`` goes back to the pool, stamped with its idle time, so the
pool's checkout check pings it; one the server closed is thrown away.
"""

from __future__ import annotations

import time
from contextlib import suppress

from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncConnection

from memory_kernel.storage.driver import held

__all__ = ["IDLE_SINCE", "SHELVED_SINCE", "Shelf"]

#: Where a connection record keeps the time its connection was last used (``Database``'s
#: checkout check pings a connection idle for too long).
IDLE_SINCE = "idle_since"
#: Set on a shelved connection's record when it goes back to the pool: its idle time began
#: when it was shelved, not at the check-in.
SHELVED_SINCE = "shelved_since"


class Shelf:
    """The connections ``Database`` keeps between leases (last in, first out)."""

    def __init__(self, capacity: int, max_idle_s: float) -> None:
        self._capacity = capacity
        self._max_idle_s = max_idle_s
        self._kept: list[tuple[AsyncConnection, float]] = []
        self._generation = 0

    @property
    def generation(self) -> int:
        """Bumped by :meth:`clear`: a connection leased before it is not kept."""
        return self._generation

    def __len__(self) -> int:
        return len(self._kept)

    async def take(self) -> AsyncConnection | None:
        """The connection kept last, if it is fresh and alive; else ``None``."""
        while self._kept:
            conn, since = self._kept.pop()
            if time.monotonic() - since <= self._max_idle_s and _alive(conn) is not None:
                return conn
            await _release(conn, since)
        return None

    async def keep(self, conn: AsyncConnection, generation: int) -> bool:
        """Keep ``conn`` for the next lease if it is clean; ``False``: the caller closes it."""
        sync = held(conn)
        if sync is None or sync.get_execution_options():
            return False
        if conn.in_transaction():
            try:
                await conn.rollback()
            except Exception:
                return False  # the caller's close deals with a broken connection
        # Checked after the rollback: other leases may have ended (or a clear run) meanwhile.
        if generation != self._generation or len(self._kept) >= self._capacity:
            return False
        self._kept.append((conn, time.monotonic()))
        return True

    async def clear(self) -> None:
        """Give every kept connection back to the pool; leases open now are not kept."""
        self._generation += 1
        kept, self._kept = self._kept, []
        for conn, since in kept:
            await _release(conn, since)


def _alive(conn: AsyncConnection) -> Connection | None:
    """``conn``'s connection if, besides, the server has not closed it."""
    sync = held(conn)
    driver = None if sync is None else sync.connection.driver_connection
    return sync if driver is not None and not driver.is_closed() else None


async def _release(conn: AsyncConnection, since: float) -> None:
    """Back to the pool (checked at its next checkout), or thrown away if it is dead."""
    sync = _alive(conn)
    if sync is not None:
        sync.connection.info[SHELVED_SINCE] = since
    else:
        with suppress(Exception):
            await conn.invalidate()
    with suppress(Exception):  # a connection the server dropped may fail its reset
        await conn.close()
