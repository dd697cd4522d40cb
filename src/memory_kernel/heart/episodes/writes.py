"""The writes of start and end, each ONE statement: the episode change and its audit rows
(``memory_events``) go together in data-modifying CTEs, so a write costs one round trip
instead of one per table. Callers own the transaction; every statement filters by
``agent_id``.

Bound parameters are never named like a column: SQLAlchemy adds an execution parameter
named like a column to an UPDATE's SET list.

Statements are built once per shape (which columns change, whether a target and a merge
group move, how many events) and cached: a handful of shapes exist.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import (
    ARRAY,
    ColumnElement,
    Select,
    Table,
    Text,
    all_,
    bindparam,
    false,
    func,
    literal,
    select,
    union_all,
)
from sqlalchemy.ext.asyncio import AsyncConnection

from memory_kernel.heart.episodes.repository import COLUMNS, to_episode, window
from memory_kernel.models.enums import EpisodeStatus
from memory_kernel.models.episodes import Episode
from memory_kernel.storage.driver import core
from memory_kernel.storage.events import Event, event_row
from memory_kernel.storage.tables import episodes, memory_events

__all__ = ["Completion", "Seen", "complete_in", "create_in", "reuse_in"]

_c = episodes.c
#: The columns of an audit row, as ``_event_params`` fills them.
_EVENT_COLUMNS = (
    "agent_id",
    "id",
    "memory_kind",
    "memory_id",
    "event",
    "reason",
    "score",
    "decided_by",
    "related_id",
    "details",
    "created_at",
)
#: The keys ``rows.new_row`` produces, in a fixed order (the statement's shape).
_NEW_COLUMNS = (
    "agent_id",
    "id",
    "session_id",
    "summary",
    "status",
    "admission",
    "canonical",
    "embedding",
    "started_at",
    "metadata",
    "created_at",
    "updated_at",
)


def _binds(table: Table, prefix: str, names: Sequence[str]) -> dict[str, Any]:
    return {n: bindparam(f"{prefix}{n}", type_=table.c[n].type) for n in names}


def _event_params(prefix: str, e: Event) -> dict[str, Any]:
    """The bound values of one audit row (the same row ``storage.events`` writes)."""
    return {f"{prefix}{k}": v for k, v in event_row(e).items()}


def _events_params(events: Sequence[Event]) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for i, e in enumerate(events):
        params.update(_event_params(f"e{i}_", e))
    return params


# -- start -----------------------------------------------------------------------------------


def _build_create(guarded: bool) -> Select[Any]:
    values = _binds(episodes, "n_", _NEW_COLUMNS)
    source = select(*values.values())
    if guarded:
        # Only if the window holds no ongoing episode but those the caller saw: this
        # statement's snapshot is taken after the start lock was granted, so it sees
        # what the lock's previous holder committed, which the caller's read may not.
        agent = bindparam("w_agent", type_=Text)
        since = bindparam("w_since", type_=_c.started_at.type)
        unseen = _c.id != all_(bindparam("w_seen", type_=ARRAY(_c.id.type)))
        missed = select(literal(1)).where(*window(agent, since), unseen)
        source = source.where(~missed.exists())
    new = episodes.insert().from_select(list(values), source).returning(*COLUMNS).cte("new")
    event = _binds(memory_events, "e0_", _EVENT_COLUMNS)
    started = memory_events.insert().from_select(
        list(event), select(*event.values()).select_from(new)
    )
    return select(new).add_cte(started.cte("started"))


def _build_reuse() -> Select[Any]:
    # Only an episode that is still ongoing is reused (an end may have completed it since
    # it was read), and its event is written only if it was.
    touched = (
        episodes.update()
        .where(
            _c.agent_id == bindparam("agent", type_=Text),
            _c.id == bindparam("episode", type_=_c.id.type),
            _c.status == EpisodeStatus.ONGOING.value,
        )
        .values(updated_at=bindparam("now", type_=_c.updated_at.type), indexed=false())
        .returning(*COLUMNS)
        .cte("touched")
    )
    values = _binds(memory_events, "e0_", _EVENT_COLUMNS)
    event = memory_events.insert().from_select(
        list(values), select(*values.values()).select_from(touched)
    )
    return select(touched).add_cte(event.cte("reused"))


_CREATE = _build_create(guarded=False)
_CREATE_GUARDED = _build_create(guarded=True)
_REUSE = _build_reuse()


@dataclass(frozen=True, slots=True)
class Seen:
    """What a caller's read of the dedup window saw: the ongoing episodes of ``agent_id``
    started at or after ``since`` (all of them: the read was not cut by its limit)."""

    agent_id: str
    since: datetime
    ids: Sequence[uuid.UUID]


async def create_in(
    conn: AsyncConnection, values: Mapping[str, Any], event: Event, *, seen: Seen | None = None
) -> Episode | None:
    """Insert a new episode (``values`` as ``rows.new_row`` makes them) and its event.

    With ``seen``, only if the dedup window holds no other ongoing episode: ``None`` (and
    nothing written) when one appeared that the caller's read did not see.
    """
    params = {f"n_{k}": values[k] for k in _NEW_COLUMNS}
    params.update(_event_params("e0_", event))
    stmt = _CREATE
    if seen is not None:
        stmt = _CREATE_GUARDED
        params.update(w_agent=seen.agent_id, w_since=seen.since, w_seen=list(seen.ids))
    rows = await core(conn, stmt, params)
    return to_episode(rows[0]) if rows else None


async def reuse_in(
    conn: AsyncConnection, *, agent_id: str, episode_id: uuid.UUID, now: datetime, event: Event
) -> Episode | None:
    """Touch the ongoing episode a start duplicates and record the reuse; ``None`` when it is
    no longer ongoing (nothing written)."""
    params = {"agent": agent_id, "episode": episode_id, "now": now}
    params.update(_event_params("e0_", event))
    rows = await core(conn, _REUSE, params)
    return to_episode(rows[0]) if rows else None


# -- end -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Completion:
    """What an end writes: the episode's new ``values``, the target's, the merge group to
    move (``repoint`` = (old head, new head)) and the audit rows.

    ``details["repointed"]`` of ``events[counted]`` is set to the number of merge-group
    members moved, which is only known once the statement runs.
    """

    values: Mapping[str, Any]
    events: Sequence[Event]
    counted: int
    now: datetime
    target_id: uuid.UUID | None = None
    target_values: Mapping[str, Any] = field(default_factory=dict)
    repoint: tuple[uuid.UUID, uuid.UUID] | None = None

    def shape(self) -> tuple[tuple[str, ...], tuple[str, ...] | None, bool, int, int]:
        target = None if self.target_id is None else tuple(sorted(self.target_values))
        repoint = self.repoint is not None
        return tuple(sorted(self.values)), target, repoint, len(self.events), self.counted


def _row_update(prefix: str, keys: Sequence[str]) -> Any:
    # The new row version is staged (``storage.indexer``): left indexed, an admitted row
    # would be inserted into the HNSW index by this very statement (5-10 ms, measured).
    return (
        episodes.update()
        .where(
            _c.agent_id == bindparam("agent", type_=Text),
            _c.id == bindparam(f"{prefix}id", type_=_c.id.type),
        )
        .values({**_binds(episodes, prefix + "v_", keys), "indexed": false()})
    )


def _regroup() -> Any:
    return (
        episodes.update()
        .where(
            _c.agent_id == bindparam("agent", type_=Text),
            _c.canonical_id == bindparam("r_old", type_=_c.id.type),
        )
        .values(
            canonical_id=bindparam("r_new", type_=_c.id.type),
            updated_at=bindparam("r_now", type_=_c.updated_at.type),
        )
        .returning(_c.id)
        .cte("regrouped")
    )


@functools.cache
def _build_complete(
    keys: tuple[str, ...],
    target_keys: tuple[str, ...] | None,
    repoint: bool,
    n_events: int,
    counted: int,
) -> Select[Any]:
    """One statement for an end: the episode, the target, the merge group and the events.

    The CTEs touch disjoint rows (the new episode, the target, the members of the target's
    group — a canonical has no ``canonical_id``), as Postgres requires of one statement.
    """
    done = _row_update("n_", keys).returning(*COLUMNS).cte("done")
    ctes = []
    if target_keys is not None:
        ctes.append(_row_update("t_", target_keys).cte("target"))
    moved: ColumnElement[Any] = literal(0)
    if repoint:
        moved = select(func.count()).select_from(_regroup()).scalar_subquery()
    rows = []
    for i in range(n_events):
        row = _binds(memory_events, f"e{i}_", _EVENT_COLUMNS)
        if i == counted:
            count = func.jsonb_build_object(literal("repointed", Text), moved)
            row["details"] = row["details"].op("||")(count)
        rows.append(select(*row.values()))
    # INSERT ... SELECT ... UNION ALL: rows in order, and (unlike a multi-row VALUES)
    # a statement SQLAlchemy can cache.
    audit = memory_events.insert().from_select(list(_EVENT_COLUMNS), union_all(*rows))
    ctes.append(audit.cte("audit"))
    return select(done).add_cte(*ctes)


async def complete_in(
    conn: AsyncConnection, *, agent_id: str, episode_id: uuid.UUID, write: Completion
) -> Episode:
    """Write an end in one statement; returns the completed episode."""
    params: dict[str, Any] = {"agent": agent_id, "n_id": episode_id}
    params.update({f"n_v_{k}": v for k, v in write.values.items()})
    if write.target_id is not None:
        params["t_id"] = write.target_id
        params.update({f"t_v_{k}": v for k, v in write.target_values.items()})
    if write.repoint is not None:
        params["r_old"], params["r_new"] = write.repoint
        params["r_now"] = write.now
    params.update(_events_params(write.events))
    stmt = _build_complete(*write.shape())
    rows = await core(conn, stmt, params)
    if len(rows) != 1:
        raise RuntimeError(f"an end wrote {len(rows)} episodes, not one")
    return to_episode(rows[0])
