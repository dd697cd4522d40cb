"""Advisory locks, one scheme: 64-bit numbers hashed here from a scope and a key.

Each writer that must not interleave with another of the same agent (learn, episode start
and admission, a session's deliberation, partition promotion, migration, consolidation)
takes an advisory lock on a number derived from a scope (``"mk-facts"``) and its key (the
agent id, or more parts). Hashing client-side with blake2b gives 64 bits, stable across
processes and versions of Python: Postgres's ``hashtext`` gives 32, and two agents whose
hashes collided skipped each other's consolidation.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from sqlalchemy import BigInteger, bindparam, text
from sqlalchemy.ext.asyncio import AsyncConnection

__all__ = ["lock", "lock_agent_writers", "lock_many", "lock_number", "try_lock", "unlock"]

_XACT = text("SELECT pg_advisory_xact_lock(:key)").bindparams(bindparam("key", type_=BigInteger))
# In the order given (WITH ORDINALITY): callers sort, so two writers never deadlock.
_XACT_MANY = text(
    "SELECT count(pg_advisory_xact_lock(k.key))"
    " FROM unnest(CAST(:keys AS bigint[])) WITH ORDINALITY AS k(key, n)"
)
_TRY = text("SELECT pg_try_advisory_lock(:key)").bindparams(bindparam("key", type_=BigInteger))
_UNLOCK = text("SELECT pg_advisory_unlock(:key)").bindparams(bindparam("key", type_=BigInteger))


def lock_number(scope: str, *key: str) -> int:
    """The lock of ``scope`` for ``key``: a signed 64-bit number."""
    material = ":".join((scope, *key)).encode()
    return int.from_bytes(hashlib.blake2b(material, digest_size=8).digest(), "big", signed=True)


async def lock(conn: AsyncConnection, scope: str, *key: str) -> None:
    """Take ``scope``'s lock of ``key`` until the transaction ends (re-entrant)."""
    await conn.execute(_XACT, {"key": lock_number(scope, *key)})


async def lock_many(conn: AsyncConnection, scope: str, keys: Iterable[str]) -> None:
    """``lock`` for several keys in one statement, in one global order (no deadlocks)."""
    numbers = sorted({lock_number(scope, k) for k in keys})
    if len(numbers) == 1:
        await conn.execute(_XACT, {"key": numbers[0]})
    elif numbers:
        await conn.execute(_XACT_MANY, {"keys": numbers})


async def try_lock(conn: AsyncConnection, scope: str, *key: str) -> bool:
    """Take ``scope``'s session-level lock of ``key`` if free (held until :func:`unlock`
    or the connection closes, so a crashed worker never keeps it)."""
    return bool(await conn.scalar(_TRY, {"key": lock_number(scope, *key)}))


async def unlock(conn: AsyncConnection, scope: str, *key: str) -> None:
    await conn.execute(_UNLOCK, {"key": lock_number(scope, *key)})


#: The agent's writers a whole-agent operation (erasure, import) must not interleave with,
#: in the one order every such operation takes them: a running consolidation is waited for
#: (one that starts meanwhile skips the agent), then episode ends and starts.
_AGENT_WRITERS = ("mk-consolidate", "mk-episode-admit", "mk-episode-start")


async def lock_agent_writers(conn: AsyncConnection, agent_id: str) -> None:
    """Wait for the agent's running consolidation, episode end and start, and keep them out
    until the transaction ends."""
    for scope in _AGENT_WRITERS:
        await lock(conn, scope, agent_id)
