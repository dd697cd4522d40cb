"""The SQL of erasure: find what ids are, delete memories with what derives from them, tidy
the references left, drop an agent's own partitions.

Functions take a connection, never commit, and always filter by ``agent_id`` (partition
pruning, invariant 1). The service decides the order and holds the locks.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection
from dataclasses import dataclass

from sqlalchemy import Text, TextClause, bindparam, text
from sqlalchemy.dialects.postgresql import ARRAY, UUID
from sqlalchemy.ext.asyncio import AsyncConnection

from memory_kernel.heart.episodes.summary import SummaryTurn
from memory_kernel.storage import locks
from memory_kernel.storage.partitions import partition_name
from memory_kernel.storage.tables import PARTITIONED_TABLES, agent_partitions

__all__ = [
    "AGENT_TABLES", "ErasedTurns", "Kept", "delete_agent_rows", "delete_decisions",
    "delete_episodes", "delete_events", "delete_facts", "delete_queue", "delete_results",
    "delete_turns", "drop_partitions", "kept_episodes", "kinds_of", "remake_summary", "untie",
]  # fmt: skip

_IDS = ARRAY(UUID(as_uuid=True))
#: Every table that holds rows of an agent, memories first: ``erase_agent`` empties them.
AGENT_TABLES = (
    "facts", "episodes", "decisions", "turns", "memory_events", "turn_results",
    "extraction_queue",
)  # fmt: skip


def _sql(statement: str, *arrays: str, texts: tuple[str, ...] = ()) -> TextClause:
    """``statement`` with ``:agent`` (and ``texts``) as text and ``arrays`` as uuid[]."""
    return text(statement).bindparams(
        bindparam("agent", type_=Text),
        *(bindparam(name, type_=_IDS) for name in arrays),
        *(bindparam(name, type_=Text) for name in texts),
    )


_KINDS = _sql(
    "SELECT id, 'fact' AS kind FROM facts WHERE agent_id = :agent AND id = ANY(:ids)"
    " UNION ALL SELECT id, 'episode' FROM episodes WHERE agent_id = :agent AND id = ANY(:ids)"
    " UNION ALL SELECT id, 'turn' FROM turns WHERE agent_id = :agent AND id = ANY(:ids)"
    " UNION ALL SELECT id, 'decision' FROM decisions WHERE agent_id = :agent AND id = ANY(:ids)",
    "ids",
)


async def kinds_of(
    conn: AsyncConnection, agent_id: str, ids: Collection[uuid.UUID]
) -> dict[uuid.UUID, str]:
    """What each of ``ids`` is among the agent's memories: ``fact``, ``episode``, ``turn``
    or ``decision`` (an id that is none of them is absent)."""
    rows = await conn.execute(_KINDS, {"agent": agent_id, "ids": list(ids)})
    return {r.id: r.kind for r in rows}


_TURNS = _sql(
    "DELETE FROM turns WHERE agent_id = :agent"
    " AND (id = ANY(:ids) OR session_id = CAST(:session AS text))"
    " RETURNING id, episode_id, role, metadata ->> 'decision_id' AS decision_id",
    "ids",
    texts=("session",),
)


@dataclass(frozen=True, slots=True)
class ErasedTurns:
    """The turns a delete erased: their ids, their episodes, and the deliberations of their
    exchanges whose message (``asked``) or reply (``replied``) is among them."""

    ids: set[uuid.UUID]
    episodes: set[uuid.UUID]
    asked: set[uuid.UUID]
    replied: set[uuid.UUID]


async def delete_turns(
    conn: AsyncConnection, agent_id: str, ids: Collection[uuid.UUID], session_id: str | None
) -> ErasedTurns:
    """Delete the turns ``ids`` and every turn of ``session_id``."""
    rows = (
        await conn.execute(_TURNS, {"agent": agent_id, "ids": list(ids), "session": session_id})
    ).all()

    def deliberations(role: str) -> set[uuid.UUID]:
        return {uuid.UUID(r.decision_id) for r in rows if r.decision_id and r.role == role}

    return ErasedTurns(
        ids={r.id for r in rows},
        episodes={r.episode_id for r in rows if r.episode_id is not None},
        asked=deliberations("user"),
        replied=deliberations("assistant"),
    )


_QUEUE = _sql("DELETE FROM extraction_queue WHERE agent_id = :agent AND turn_id = ANY(:ids)", "ids")


async def delete_queue(
    conn: AsyncConnection, agent_id: str, turn_ids: Collection[uuid.UUID]
) -> int:
    """Delete the extraction queue rows of these turns (a drain holding them learns
    nothing from them: it settles only the rows it still holds)."""
    if not turn_ids:
        return 0
    done = await conn.execute(_QUEUE, {"agent": agent_id, "ids": list(turn_ids)})
    return done.rowcount


# An episode's earlier versions: those merged into it and those it replaced, transitively.
_EPISODES = _sql(
    "WITH RECURSIVE gone(id) AS ("
    " SELECT id FROM episodes WHERE agent_id = :agent"
    "  AND (id = ANY(:ids) OR session_id = CAST(:session AS text))"
    " UNION SELECT e.id FROM episodes e JOIN gone g"
    "  ON e.canonical_id = g.id OR e.superseded_by = g.id WHERE e.agent_id = :agent)"
    " DELETE FROM episodes WHERE agent_id = :agent AND id IN (SELECT id FROM gone)"
    " RETURNING id",
    "ids",
    texts=("session",),
)


async def _deleted(
    conn: AsyncConnection, statement: TextClause, **params: object
) -> set[uuid.UUID]:
    """The ids a ``DELETE … RETURNING id`` deleted."""
    return set((await conn.scalars(statement, params)).all())


async def delete_episodes(
    conn: AsyncConnection, agent_id: str, ids: Collection[uuid.UUID], session_id: str | None
) -> set[uuid.UUID]:
    """Delete the episodes ``ids`` and those of ``session_id``, with their earlier versions."""
    return await _deleted(conn, _EPISODES, agent=agent_id, ids=list(ids), session=session_id)


@dataclass(frozen=True, slots=True)
class Kept:
    """An episode of erased turns, and the turns it still has (in the order they were said)."""

    id: uuid.UUID
    ongoing: bool
    turns: list[SummaryTurn]


_KEPT = _sql(
    "SELECT e.id, e.status = 'ongoing' AS ongoing, t.role, t.content, t.created_at"
    " FROM episodes e LEFT JOIN turns t ON t.agent_id = :agent AND t.episode_id = e.id"
    " WHERE e.agent_id = :agent AND e.id = ANY(:ids)"
    " ORDER BY e.id, t.created_at, t.seq, t.id",
    "ids",
)


async def kept_episodes(
    conn: AsyncConnection, agent_id: str, ids: Collection[uuid.UUID]
) -> list[Kept]:
    """The episodes ``ids`` (those still there), each with the turns it still has."""
    if not ids:
        return []
    found: dict[uuid.UUID, Kept] = {}
    for r in await conn.execute(_KEPT, {"agent": agent_id, "ids": list(ids)}):
        kept = found.setdefault(r.id, Kept(r.id, r.ongoing, []))
        if r.content is not None:
            kept.turns.append(SummaryTurn(r.role, r.content, r.created_at))
    return list(found.values())


# Its vector is made again after the commit (``consolidation.repository.fill_vector``), or by
# the next ``consolidate``.
_REMAKE = _sql(
    "UPDATE episodes SET summary = :summary, embedding = NULL, updated_at = now()"
    " WHERE agent_id = :agent AND id = :id",
    texts=("summary",),
).bindparams(bindparam("id", type_=UUID(as_uuid=True)))


# The host's summariser's summary in place of the extractive one the erasure wrote, unless
# the episode changed since.
_REWRITE = _sql(
    "UPDATE episodes SET summary = :new, embedding = NULL, updated_at = now()"
    " WHERE agent_id = :agent AND id = :id AND summary = :old AND status <> 'ongoing'",
    texts=("new", "old"),
).bindparams(bindparam("id", type_=UUID(as_uuid=True)))


async def rewrite_summary(
    conn: AsyncConnection, agent_id: str, episode_id: uuid.UUID, old: str, new: str
) -> bool:
    """Give the ended episode ``new`` as its summary if it still has ``old``; whether it did."""
    params = {"agent": agent_id, "id": episode_id, "old": old, "new": new}
    return bool((await conn.execute(_REWRITE, params)).rowcount)


async def remake_summary(
    conn: AsyncConnection, agent_id: str, episode_id: uuid.UUID, summary: str
) -> None:
    """Give the episode ``summary`` in place of the one it had, and no vector."""
    await conn.execute(_REMAKE, {"agent": agent_id, "id": episode_id, "summary": summary})


# A fact's earlier versions: those it superseded and the duplicates merged into it,
# transitively; the seeds are the facts asked for, those extracted from erased turns and,
# for a session, those remembered in its episodes.
_FACTS = _sql(
    "WITH RECURSIVE gone(id) AS ("
    " SELECT id FROM facts WHERE agent_id = :agent AND (id = ANY(:ids)"
    "  OR (metadata ->> 'turn_id') = ANY(CAST(:turns AS text[])) OR derived_from && :episodes)"
    " UNION SELECT f.id FROM facts f JOIN gone g"
    "  ON f.superseded_by = g.id OR f.merged_into = g.id WHERE f.agent_id = :agent)"
    " DELETE FROM facts WHERE agent_id = :agent AND id IN (SELECT id FROM gone) RETURNING id",
    "ids",
    "turns",
    "episodes",
)


async def delete_facts(
    conn: AsyncConnection,
    agent_id: str,
    ids: Collection[uuid.UUID],
    *,
    from_turns: Collection[uuid.UUID],
    from_episodes: Collection[uuid.UUID],
) -> set[uuid.UUID]:
    """Delete the facts ``ids``, those extracted from the turns ``from_turns`` and those
    derived from the episodes ``from_episodes``, each with its earlier versions."""
    return await _deleted(
        conn, _FACTS, agent=agent_id, ids=list(ids), turns=[str(t) for t in from_turns],
        episodes=list(from_episodes),
    )  # fmt: skip


# A deliberation's text is the message's until it is finalized, the reply's after.
_DECISIONS = _sql(
    "DELETE FROM decisions WHERE agent_id = :agent"
    " AND (id = ANY(:ids) OR session_id = CAST(:session AS text)"
    "  OR (id = ANY(:asked) AND NOT finalized) OR (id = ANY(:replied) AND finalized))"
    " RETURNING id",
    "ids",
    "asked",
    "replied",
    texts=("session",),
)


async def delete_decisions(
    conn: AsyncConnection,
    agent_id: str,
    ids: Collection[uuid.UUID],
    session_id: str | None,
    *,
    of_turns: ErasedTurns,
) -> set[uuid.UUID]:
    """Delete the decisions ``ids`` and those of ``session_id`` (rejected ones too), and the
    deliberations whose text came from a turn of ``of_turns``."""
    return await _deleted(
        conn, _DECISIONS, agent=agent_id, ids=list(ids), session=session_id,
        asked=list(of_turns.asked), replied=list(of_turns.replied),
    )  # fmt: skip


# What stays must not point at what is gone: a fact's contradictions and the episodes it was
# derived from, the episode of a turn or a decision that stays, a turn's deliberation.
_UNTIE = (
    _sql(
        "UPDATE facts SET contradicts = ARRAY(SELECT unnest(contradicts) EXCEPT"
        " SELECT unnest(CAST(:gone AS uuid[]))),"
        " derived_from = ARRAY(SELECT unnest(derived_from) EXCEPT"
        " SELECT unnest(CAST(:gone AS uuid[])))"
        " WHERE agent_id = :agent AND (contradicts && :gone OR derived_from && :gone)",
        "gone",
    ),
    _sql(
        "UPDATE turns SET episode_id = NULL WHERE agent_id = :agent AND episode_id = ANY(:gone)",
        "gone",
    ),
    _sql(
        "UPDATE turns SET metadata = metadata - 'decision_id' WHERE agent_id = :agent"
        " AND metadata ->> 'decision_id' = ANY(CAST(:gone AS text[]))",
        "gone",
    ),
    _sql(
        "UPDATE decisions SET episode_id = NULL"
        " WHERE agent_id = :agent AND episode_id = ANY(:gone)",
        "gone",
    ),
)


async def untie(conn: AsyncConnection, agent_id: str, gone: Collection[uuid.UUID]) -> None:
    """Take the erased ids out of the references of what stays."""
    if not gone:
        return
    for statement in _UNTIE:
        await conn.execute(statement, {"agent": agent_id, "gone": list(gone)})


_EVENTS = _sql(
    "DELETE FROM memory_events WHERE agent_id = :agent"
    " AND (memory_id = ANY(:gone) OR related_id = ANY(:gone))",
    "gone",
)


async def _rows_naming(
    conn: AsyncConnection, statement: TextClause, agent_id: str, gone: Collection[uuid.UUID]
) -> int:
    """How many rows ``statement`` deleted for naming one of ``gone``."""
    if not gone:
        return 0
    return (await conn.execute(statement, {"agent": agent_id, "gone": list(gone)})).rowcount


async def delete_events(conn: AsyncConnection, agent_id: str, gone: Collection[uuid.UUID]) -> int:
    """Delete the audit rows about the erased memories (their reasons quote them)."""
    return await _rows_naming(conn, _EVENTS, agent_id, gone)


# A recorded post_turn result names the turn's episode, its decisions and remembered facts.
_RESULTS = _sql(
    "DELETE FROM turn_results WHERE agent_id = :agent AND EXISTS ("
    " SELECT 1 FROM unnest(CAST(:gone AS uuid[])) AS g(id)"
    " WHERE strpos(CAST(result AS text), CAST(g.id AS text)) > 0)",
    "gone",
)


async def delete_results(conn: AsyncConnection, agent_id: str, gone: Collection[uuid.UUID]) -> int:
    """Delete the recorded ``post_turn`` results that name an erased memory."""
    return await _rows_naming(conn, _RESULTS, agent_id, gone)


async def delete_agent_rows(
    conn: AsyncConnection, agent_id: str, tables: Collection[str]
) -> dict[str, int]:
    """Delete every row of the agent in ``tables`` (of :data:`AGENT_TABLES`), table by
    table; returns the counts."""
    counts = {}
    for table in tables:
        if table not in AGENT_TABLES:
            raise ValueError(f"{table!r} holds no agent rows")
        statement = _sql(f"DELETE FROM {table} WHERE agent_id = :agent")  # noqa: S608
        counts[table] = (await conn.execute(statement, {"agent": agent_id})).rowcount
    return counts


# A partition is dropped only after a short wait for its table: ``DROP`` takes an ACCESS
# EXCLUSIVE lock on the parent, and a request queued behind a long transaction would stop
# every other agent's reads of that table meanwhile. Past it, ``ConflictError``: retry.
_LOCK_TIMEOUT = text("SELECT set_config('lock_timeout', '2s', true)")


async def drop_partitions(conn: AsyncConnection, agent_id: str) -> int:
    """Drop the agent's own partitions (empty by now) and forget they existed: their names
    and CHECK constraints are derived from the agent id."""
    c = agent_partitions.c
    tables = (
        await conn.scalars(agent_partitions.select().with_only_columns(c.table_name).where(
            c.agent_id == agent_id
        ))
    ).all()  # fmt: skip
    if not tables:
        return 0
    await conn.execute(_LOCK_TIMEOUT)
    dropped = sorted(t for t in tables if t in PARTITIONED_TABLES)
    for table in dropped:
        await locks.lock(conn, "mk-partition", table, agent_id)
        await conn.execute(text(f"DROP TABLE IF EXISTS {partition_name(table, agent_id)}"))
    await conn.execute(agent_partitions.delete().where(c.agent_id == agent_id))
    return len(dropped)
