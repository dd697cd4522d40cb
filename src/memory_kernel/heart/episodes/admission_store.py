"""The SQL of an episode's end (admission): the agent's admission lock, the episode locked
with its admission candidates in one statement, the candidate search alone (the judge
path), the REPLACE/MERGE targets locked, and the end's write in one statement. Like
``store.py``: functions take a connection, never commit, and always filter by ``agent_id``.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import (
    ARRAY,
    BigInteger,
    ColumnElement,
    Integer,
    Select,
    Text,
    any_,
    bindparam,
    false,
    func,
    literal,
    select,
    text,
    union_all,
)
from sqlalchemy.engine import RowMapping
from sqlalchemy.ext.asyncio import AsyncConnection

from memory_kernel.heart.episodes.store import (
    COLUMNS,
    binds,
    event_params,
    to_episode,
)
from memory_kernel.judges.base import AdmissionCandidate
from memory_kernel.models.enums import EpisodeStatus
from memory_kernel.models.episodes import Episode
from memory_kernel.runtime import Vector
from memory_kernel.storage import locks
from memory_kernel.storage.events import Event
from memory_kernel.storage.search import knn_select, knn_sql
from memory_kernel.storage.tables import episodes, memory_events
from memory_kernel.storage.vector import Vector as VectorType
from memory_kernel.storage.vector import as_array

__all__ = [
    "Candidate",
    "Completion",
    "EndRead",
    "candidates",
    "complete",
    "get_for_end",
    "lock_admission",
    "lock_targets",
    "set_ef_search",
]

_c = episodes.c
_AGENT = bindparam("agent", type_=Text)
_VECTOR = bindparam("vector", type_=VectorType())

# Transaction-local (``is_local``): the pool's next user gets the configured value back.
_SET_EF = text("SELECT set_config('hnsw.ef_search', :ef_search, true)")
# The end's first statement: the agent's admission lock (``storage.locks``' scheme) and the
# search's ef_search together, one round trip instead of two; and the episode's status in
# the statement's snapshot, taken before it waits for the lock: an end that finds the
# episode ended once it holds the lock knows whether a concurrent end did it meanwhile.
_LOCK_ADMISSION = text(
    "SELECT pg_advisory_xact_lock(:key), set_config('hnsw.ef_search', :ef_search, true),"
    " (SELECT status FROM episodes WHERE agent_id = :agent AND id = :episode) AS before"
).bindparams(bindparam("key", type_=BigInteger), _AGENT, bindparam("episode", type_=_c.id.type))


async def set_ef_search(conn: AsyncConnection, ef_search: int) -> None:
    """Set ``hnsw.ef_search`` of the admission search until the transaction ends."""
    await conn.execute(_SET_EF, {"ef_search": str(ef_search)})


async def lock_admission(
    conn: AsyncConnection, agent_id: str, ef_search: int, episode_id: uuid.UUID
) -> str | None:
    """Serialise the agent's admissions until the transaction ends (statements run after
    this see everything the lock's previous holder committed) and set the search's
    ``ef_search`` (as :func:`set_ef_search`). Returns ``episode_id``'s status as it was
    before the wait for the lock (``None``: no such episode then)."""
    key = locks.lock_number("mk-episode-admit", agent_id)
    params = {"key": key, "ef_search": str(ef_search), "agent": agent_id, "episode": episode_id}
    before = (await conn.execute(_LOCK_ADMISSION, params)).one().before
    return None if before is None else str(before)


#: What a candidate needs: the judge's view, plus its group head for a MERGE.
_CANDIDATE_COLUMNS = (
    _c.id,
    _c.summary,
    _c.outcome,
    _c.references,
    _c.artifacts,
    _c.ended_at,
    _c.canonical_id,
)
# storage.search.nearest, prebuilt: both search tiers, each with its literal predicate so
# the planner uses the agent partition's HNSW index (and the staged rows' btree).
_CANDIDATES: Select[Any] = knn_select(
    episodes,
    _CANDIDATE_COLUMNS,
    [
        _c.agent_id == _AGENT,
        _c.status == EpisodeStatus.COMPLETED.value,
        _c.id != bindparam("exclude", type_=_c.id.type),
    ],
    _VECTOR,
    bindparam("k", type_=Integer),
)

#: An admission candidate and the head of its merge group (``None``: it is the head).
Candidate = tuple[AdmissionCandidate, uuid.UUID | None]


async def candidates(
    conn: AsyncConnection,
    *,
    agent_id: str,
    vector: Vector,
    exclude: uuid.UUID,
    k: int,
    min_similarity: float,
) -> list[Candidate]:
    """The admission candidates: up to ``k`` admitted, completed episodes other than
    ``exclude`` with similarity at least ``min_similarity``, most similar first."""
    params = {"agent": agent_id, "vector": vector, "exclude": exclude, "k": k}
    rows = await conn.execute(_CANDIDATES, params)
    found = [_candidate(r._mapping, "", min_similarity) for r in rows]
    return [c for c in found if c is not None]


def _end_read_sql() -> str:
    episode = ", ".join(f'"{c.name}"' for c in COLUMNS)
    wanted = ", ".join(f'"{c.name}"' for c in _CANDIDATE_COLUMNS)
    out = ", ".join(f'c."{c.name}" AS "c_{c.name}"' for c in _CANDIDATE_COLUMNS)
    search = knn_sql(
        "episodes", select=wanted, vector="(SELECT v FROM q)", agent=":agent", k=":k",
        where=" AND status = 'completed' AND id <> :episode",
    )  # fmt: skip
    # Names and predicates are the table's own constants (see storage.search.knn_sql).
    return (
        f"WITH e AS MATERIALIZED (SELECT {episode}, embedding FROM episodes"  # noqa: S608
        " WHERE agent_id = :agent AND id = :episode FOR UPDATE),"
        " q AS MATERIALIZED (SELECT COALESCE(CAST(:vector AS vector), e.embedding) AS v FROM e)"
        f" SELECT e.*, {out}, c.distance AS c_distance"
        # Only candidates that may pass the threshold come back (``_candidate`` has the last
        # word): most ends have none, and the episode's columns travel once.
        f" FROM e LEFT JOIN LATERAL ({search}) AS c ON c.distance <= :max_distance"
        " ORDER BY c.distance"
    )


_END_READ = text(_end_read_sql()).bindparams(_VECTOR)
#: Widens the SQL pre-filter by more than float rounding, so it never drops a candidate
#: that ``_candidate``'s own test (similarity = 1 - distance) would keep.
_SLACK = 1e-9


class EndRead(NamedTuple):
    """End's read: the episode and its stored vector, the vector its candidates were
    searched with (``None``: none was searched) and those candidates."""

    episode: Episode
    vector: Vector | None
    searched: Vector | None
    candidates: list[Candidate]


async def get_for_end(
    conn: AsyncConnection,
    *,
    agent_id: str,
    episode_id: uuid.UUID,
    vector: Vector | None,
    k: int,
    min_similarity: float,
) -> EndRead | None:
    """The episode, locked (FOR UPDATE), and its admission :func:`candidates` searched with
    ``vector`` or, when that is ``None``, the episode's stored vector — one round trip.
    Run it after :func:`lock_admission`: it then sees everything the lock's previous
    holder committed."""
    params = {
        "agent": agent_id,
        "episode": episode_id,
        "vector": vector,
        "k": k,
        "max_distance": 1.0 - min_similarity + _SLACK,
    }
    rows = (await conn.execute(_END_READ, params)).all()
    if not rows:
        return None
    stored = as_array(rows[0].embedding)
    searched = vector if vector is not None else stored
    found = [
        _candidate(r._mapping, "c_", min_similarity)
        for r in rows
        if searched is not None and r.c_id is not None
    ]
    return EndRead(
        to_episode(rows[0]._mapping), stored, searched, [c for c in found if c is not None]
    )


def _candidate(m: RowMapping, prefix: str, min_similarity: float) -> Candidate | None:
    similarity = 1.0 - float(m[f"{prefix}distance"])
    if similarity < min_similarity:
        return None
    candidate = AdmissionCandidate(
        id=m[f"{prefix}id"],
        summary=m[f"{prefix}summary"],
        outcome=m[f"{prefix}outcome"],
        references=tuple(m[f"{prefix}references"]),
        artifacts=tuple(m[f"{prefix}artifacts"]),
        ended_at=m[f"{prefix}ended_at"],
        similarity=similarity,
    )
    return candidate, m[f"{prefix}canonical_id"]


_TARGETS = (
    select(*COLUMNS)
    # = ANY(array): one SQL text (one prepared statement) whatever the number of ids.
    .where(_c.agent_id == _AGENT, _c.id == any_(bindparam("ids", type_=ARRAY(_c.id.type))))
    .with_for_update()
)


async def lock_targets(
    conn: AsyncConnection, *, agent_id: str, episode_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, Episode]:
    """Lock and load the episodes a REPLACE/MERGE acts on (one round trip)."""
    rows = await conn.execute(_TARGETS, {"agent": agent_id, "ids": list(episode_ids)})
    return {r.id: to_episode(r._mapping) for r in rows}


# -- the end's write ---------------------------------------------------------------------------


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
    # would be inserted into the HNSW index by this very statement.
    return (
        episodes.update()
        .where(_c.agent_id == _AGENT, _c.id == bindparam(f"{prefix}id", type_=_c.id.type))
        .values({**binds(episodes, prefix + "v_", keys), "indexed": false()})
    )


def _regroup() -> Any:
    return (
        episodes.update()
        .where(_c.agent_id == _AGENT, _c.canonical_id == bindparam("r_old", type_=_c.id.type))
        .values(
            canonical_id=bindparam("r_new", type_=_c.id.type),
            updated_at=bindparam("r_now", type_=_c.updated_at.type),
        )
        .returning(_c.id)
        .cte("regrouped")
    )


@functools.cache
def _complete(
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
    names = [c.name for c in memory_events.c]
    rows = []
    for i in range(n_events):
        row = binds(memory_events, f"e{i}_", names)
        if i == counted:
            count = func.jsonb_build_object(literal("repointed", Text), moved)
            row["details"] = row["details"].op("||")(count)  # type: ignore[assignment]
        rows.append(select(*row.values()))
    # INSERT ... SELECT ... UNION ALL: the rows in order, in one statement.
    ctes.append(memory_events.insert().from_select(names, union_all(*rows)).cte("audit"))
    return select(done).add_cte(*ctes)


async def complete(
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
    for i, event in enumerate(write.events):
        params.update(event_params(f"e{i}_", event))
    rows = (await conn.execute(_complete(*write.shape()), params)).all()
    if len(rows) != 1:
        raise RuntimeError(f"an end wrote {len(rows)} episodes, not one")
    return to_episode(rows[0]._mapping)
