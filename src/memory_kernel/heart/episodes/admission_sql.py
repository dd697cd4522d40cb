"""The reads of an episode's admission (``ending.py``): the transaction's opening, the
episode locked with its admission candidates in one statement, the candidate search alone
(the judge path), and the REPLACE/MERGE targets locked. Like ``repository.py``: functions
take a connection, never commit, and always filter by ``agent_id``; statements are built
once and run on the driver.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from sqlalchemy import ARRAY, Integer, Select, Text, any_, bindparam, func, literal, select
from sqlalchemy.engine import RowMapping
from sqlalchemy.ext.asyncio import AsyncConnection

from memory_kernel.heart.episodes.repository import COLUMNS, to_episode
from memory_kernel.heart.episodes.vectors import Vector
from memory_kernel.judges.base import AdmissionCandidate
from memory_kernel.models.enums import EpisodeStatus
from memory_kernel.models.episodes import Episode
from memory_kernel.storage import locks
from memory_kernel.storage.driver import core, fetch
from memory_kernel.storage.search import knn_select, knn_sql
from memory_kernel.storage.tables import episodes
from memory_kernel.storage.vector import Vector as VectorType
from memory_kernel.storage.vector import as_array

__all__ = [
    "Candidate",
    "EndRead",
    "admission_opening",
    "candidates",
    "get_for_end",
    "lock_targets",
    "set_ef_search",
]

_c = episodes.c
_AGENT = bindparam("agent_id", type_=Text)
_VECTOR = bindparam("vector", type_=VectorType())


def admission_opening(agent_id: str, ef_search: int) -> list[str]:
    """What an end's transaction opens with (``Database.lean_transaction``, one round trip
    with ``BEGIN``): the agent's admission lock and ``ef_search`` for the candidate search.
    Statements after it see everything the lock's previous holder committed."""
    return [
        locks.lock_statement("mk-episode-admit", agent_id),
        f"SET LOCAL hnsw.ef_search = {ef_search:d}",
        # Planned once per connection: custom plans of the read and the write CTE cost more
        # than running them (end p50 5.8 -> 3.6 ms at 10k episodes, benchmarks/episodes.py);
        # the generic plans still prune to the agent's partition when they start.
        "SET LOCAL plan_cache_mode = force_generic_plan",
    ]


# Transaction-local (``is_local``): the pool's next user gets the configured value back.
_SET_EF = func.set_config("hnsw.ef_search", bindparam("ef_search", type_=Text), literal(True))

_SET_EF_ONLY = select(_SET_EF)

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

_TARGETS = (
    select(*COLUMNS)
    # = ANY(array): one SQL text (one prepared statement) whatever the number of ids.
    .where(_c.agent_id == _AGENT, _c.id == any_(bindparam("ids", type_=ARRAY(_c.id.type))))
    .with_for_update()
)


async def set_ef_search(conn: AsyncConnection, ef_search: int) -> None:
    """Set ``hnsw.ef_search`` until the transaction ends."""
    await core(conn, _SET_EF_ONLY, {"ef_search": str(ef_search)})


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
    params = {"agent_id": agent_id, "vector": vector, "exclude": exclude, "k": k}
    rows = await core(conn, _CANDIDATES, params)
    found = [_candidate(r._mapping, "", min_similarity) for r in rows]
    return [c for c in found if c is not None]


def _end_read_sql() -> str:
    episode = ", ".join(f'"{c.name}"' for c in COLUMNS)
    wanted = ", ".join(f'"{c.name}"' for c in _CANDIDATE_COLUMNS)
    out = ", ".join(f'c."{c.name}" AS "c_{c.name}"' for c in _CANDIDATE_COLUMNS)
    search = knn_sql(
        "episodes", select=wanted, vector="(SELECT v FROM q)", agent=":agent_id", k=":k",
        where=" AND status = 'completed' AND id <> :episode_id",
    )  # fmt: skip
    # Names and predicates are the table's own constants (see storage.search.knn_sql).
    return (
        f"WITH e AS MATERIALIZED (SELECT {episode}, embedding FROM episodes"  # noqa: S608
        " WHERE agent_id = :agent_id AND id = :episode_id FOR UPDATE),"
        " q AS MATERIALIZED (SELECT COALESCE(CAST(:vector AS vector), e.embedding) AS v FROM e)"
        f" SELECT e.*, {out}, c.distance AS c_distance"
        # Only candidates that may pass the threshold come back (``_candidate`` has the last
        # word): most ends have none, and the episode's columns travel once.
        f" FROM e LEFT JOIN LATERAL ({search}) AS c ON c.distance <= :max_distance"
        " ORDER BY c.distance"
    )


_END_READ = _end_read_sql()
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
    Run it after the admission lock (:func:`admission_opening`): its snapshot then holds
    everything the lock's previous holder committed."""
    params = {
        "agent_id": agent_id,
        "episode_id": episode_id,
        "vector": vector,
        "k": k,
        "max_distance": 1.0 - min_similarity + _SLACK,
    }
    rows = await fetch(conn, _END_READ, params)
    if not rows:
        return None
    stored = as_array(rows[0].embedding)
    searched = vector if vector is not None else stored
    found = [
        _candidate(r._mapping, "c_", min_similarity)
        for r in rows
        if searched is not None and r.c_id is not None
    ]
    return EndRead(to_episode(rows[0]), stored, searched, [c for c in found if c is not None])


def _candidate(
    m: Mapping[str, Any] | RowMapping, prefix: str, min_similarity: float
) -> Candidate | None:
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


async def lock_targets(
    conn: AsyncConnection, *, agent_id: str, episode_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, Episode]:
    """Lock and load the episodes a REPLACE/MERGE acts on (one round trip)."""
    rows = await core(conn, _TARGETS, {"agent_id": agent_id, "ids": list(episode_ids)})
    return {r.id: to_episode(r) for r in rows}
