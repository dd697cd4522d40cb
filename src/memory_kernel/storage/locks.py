"""Advisory locks of the write paths, as 64-bit numbers hashed here.

Each writer that must not interleave with another of the same agent (learn, episode start,
episode admission) takes a transaction-level advisory lock on a number derived from a scope
and the agent id. Hashing client-side means the lock can travel with ``BEGIN`` as constant
SQL (``Database.lean_transaction``): an integer literal, never a caller's text.
"""

from __future__ import annotations

import hashlib

__all__ = ["lock_number", "lock_statement"]


def lock_number(scope: str, agent_id: str) -> int:
    """The lock of ``scope`` for ``agent_id``: a signed 64-bit number (blake2b, stable
    across processes and versions of Python)."""
    digest = hashlib.blake2b(f"{scope}:{agent_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def lock_statement(scope: str, agent_id: str) -> str:
    """Constant SQL taking that lock until the transaction ends."""
    return f"SELECT pg_advisory_xact_lock({lock_number(scope, agent_id):d})"
