"""The SQL of start and end: statement counts, statements compiled once per shape, the
start lock taken before the window is read, no embedding inside a transaction,
transaction-local ef_search, and admission through an agent's own HNSW partition."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence
from datetime import timedelta
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from sqlalchemy import func, select, text

from memory_kernel import MemoryKernel
from memory_kernel.heart.episodes import admission_store, store
from memory_kernel.heart.episodes.ending import ADMISSION_EF_SEARCH
from memory_kernel.heart.episodes.policy import OngoingEpisode
from memory_kernel.models.enums import EventKind
from memory_kernel.models.episodes import AdmissionDecision, EpisodeInput
from memory_kernel.storage import locks
from memory_kernel.storage.partitions import rebalance
from memory_kernel.storage.tables import episodes
from memory_kernel.testing import FakeEmbedder, FrozenClock
from tests.conftest import schema_config
from tests.heart.episodes.conftest import TASK, admission_event, events_of, run
from tests.statements import count_statements

STATUS = "Show me your current status"


def _ep(summary: str, session: str = "s1") -> EpisodeInput:
    return EpisodeInput(agent_id="a1", session_id=session, summary=summary)


statements = count_statements


async def _count(kernel: MemoryKernel) -> int:
    async with kernel.database.connection() as conn:
        n = await conn.scalar(
            select(func.count()).select_from(episodes).where(episodes.c.agent_id == "a1")
        )
    return int(n or 0)


# -- statement counts (the load-independent side of latency) ------------------------------


async def test_a_start_is_three_statements_a_sessions_next_turn_two(
    kernel: MemoryKernel,
) -> None:
    with statements(kernel) as sent:
        created = await kernel.heart.episodes.start(_ep(STATUS))
    assert not created.deduplicated
    assert len(sent) == 3, sent  # lock, the session's episode (none) or the window, insert
    assert sent[0].startswith("SELECT pg_advisory_xact_lock(")
    with statements(kernel) as sent:
        reused = await kernel.heart.episodes.start(_ep(STATUS, session="s2"))
    assert reused.deduplicated and reused.episode.id == created.episode.id
    assert len(sent) == 3, sent  # lock, the session's episode (none) or the window, touch
    with statements(kernel) as sent:
        going_on = await kernel.heart.episodes.start(_ep("Something else entirely"))
    assert going_on.episode.id == created.episode.id
    assert len(sent) == 2, sent  # lock, the session's episode touched


async def test_an_end_is_three_statements_four_with_a_target(kernel: MemoryKernel) -> None:
    with statements(kernel) as sent:
        first = await run(kernel, "failure")
    assert first.decision is AdmissionDecision.ADD
    assert len(sent) == 3 + 3, sent  # the start; lock + ef_search, episode + search, write
    with statements(kernel) as sent:
        second = await run(kernel, "success")
    assert second.decision is AdmissionDecision.REPLACE
    assert len(sent) == 3 + 4, sent  # ... and the target, locked


class _CountingCache(dict[Any, Any]):
    """A compiled-statement cache (SQLAlchemy's ``compiled_cache`` option) that counts the
    statements compiled."""

    compiled = 0

    def __setitem__(self, key: Any, value: Any) -> None:
        self.compiled += 1
        super().__setitem__(key, value)


async def test_hot_path_statements_are_compiled_once(kernel: MemoryKernel) -> None:
    """Start and end use a fixed set of statement shapes (values are bound, never part of
    the SQL): another agent's rounds compile nothing new."""
    cache = _CountingCache()
    kernel.database.engine.sync_engine.update_execution_options(compiled_cache=cache)

    async def round_of(agent: str) -> None:
        assert (await run(kernel, "failure", agent=agent)).decision is AdmissionDecision.ADD
        assert (await run(kernel, "success", agent=agent)).decision is AdmissionDecision.REPLACE

    await round_of("a1")
    first = cache.compiled
    await round_of("a2")
    await round_of("a3")
    assert first > 0 and cache.compiled == first


# -- the start lock ------------------------------------------------------------------------


async def test_a_start_holds_the_agents_start_lock_until_the_unit_ends(
    kernel: MemoryKernel,
) -> None:
    key = locks.lock_number("mk-episode-start", "a1")
    probe = text("SELECT pg_try_advisory_xact_lock(:key)")

    async def free() -> bool:
        # Outside the unit of work: a connection of its own, not the unit's.
        async with kernel.database.engine.connect() as other:
            return bool(await other.scalar(probe, {"key": key}))

    async with kernel.database.transaction():
        await kernel.heart.episodes.start(_ep(STATUS))
        assert not await free()
    assert await free()


async def test_a_start_never_reuses_an_episode_ended_after_the_read(
    kernel: MemoryKernel, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = await kernel.heart.episodes.start(_ep(STATUS))
    await kernel.heart.episodes.end(first.episode.id, agent_id="a1", outcome="success")

    # The read still saw it ongoing: as if the end committed between the read and the reuse
    # (ends do not take the start lock).
    async def stale(_conn: Any, **_kwargs: Any) -> tuple[None, list[OngoingEpisode]]:
        return None, [OngoingEpisode(first.episode.id, STATUS, 1.0)]

    monkeypatch.setattr(store, "session_or_recent", stale)
    again = await kernel.heart.episodes.start(_ep(STATUS, session="s2"))
    assert not again.deduplicated and again.episode.id != first.episode.id
    kinds = [e["event"] for e in await events_of(kernel, first.episode.id)]
    assert EventKind.EPISODE_REUSED not in kinds


# -- the embedder is never asked inside a transaction -----------------------------------------


def _record_units(
    kernel: MemoryKernel, embedder: FakeEmbedder, monkeypatch: pytest.MonkeyPatch
) -> list[bool]:
    """Whether a unit of work was open in the caller's context at each embedder call."""
    seen: list[bool] = []
    real = embedder.embed

    async def embed(texts: Sequence[str]) -> npt.NDArray[np.float32]:
        seen.append(kernel.database._current() is not None)
        return await real(texts)

    monkeypatch.setattr(embedder, "embed", embed)
    return seen


async def test_an_end_embeds_a_summary_start_could_not_outside_the_transaction(
    kernel: MemoryKernel, embedder: FakeEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    done = await run(kernel, "success")
    embedder.fail = RuntimeError("down")
    started = await kernel.heart.episodes.start(_ep(TASK, session="s2"))
    embedder.fail = None
    seen = _record_units(kernel, embedder, monkeypatch)
    end = await kernel.heart.episodes.end(started.episode.id, agent_id="a1", outcome="success")
    assert seen == [False]  # asked once, with no transaction open
    assert end.decision is not AdmissionDecision.ADD and end.target_id == done.episode.id
    async with kernel.database.connection() as conn:
        stored = await store.get(conn, agent_id="a1", episode_id=started.episode.id)
    assert stored is not None and stored[1] is not None  # the vector was written


async def test_start_and_end_embed_before_their_transaction(
    kernel: MemoryKernel, embedder: FakeEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = _record_units(kernel, embedder, monkeypatch)
    started = await kernel.heart.episodes.start(_ep("working on it"))
    await kernel.heart.episodes.end(
        started.episode.id, agent_id="a1", outcome="success", summary=TASK
    )
    assert seen == [False, False]


# -- ef_search and the HNSW path ------------------------------------------------------------


async def test_ef_search_is_lowered_for_the_end_transaction_only(kernel: MemoryKernel) -> None:
    started = await kernel.heart.episodes.start(_ep(TASK))
    configured = str(kernel.config.storage.hnsw_ef_search)
    show = text("SELECT current_setting('hnsw.ef_search')")
    async with kernel.database.transaction() as conn:
        before = await admission_store.lock_admission(conn, "a1", 17, started.episode.id)
        assert before == "ongoing"
        found = await admission_store.get_for_end(
            conn, agent_id="a1", episode_id=started.episode.id, vector=None, k=3,
            min_similarity=0.7,
        )  # fmt: skip
        assert found is not None and found.episode.id == started.episode.id
        assert await conn.scalar(show) == "17"
    async with kernel.database.connection() as conn:
        assert await conn.scalar(show) == configured


async def test_the_end_read_searches_with_the_vector_given_else_the_stored_one(
    kernel: MemoryKernel,
) -> None:
    done = await run(kernel, "success")  # a completed episode of TASK
    other = "Translate the onboarding guide into German for the Berlin office"
    started = await kernel.heart.episodes.start(_ep(other))
    given = (await kernel.embedder.embed([TASK]))[0]
    async with kernel.database.transaction() as conn:
        await admission_store.lock_admission(conn, "a1", 40, started.episode.id)
        by_stored = await admission_store.get_for_end(
            conn, agent_id="a1", episode_id=started.episode.id, vector=None, k=3,
            min_similarity=0.7,
        )  # fmt: skip
        by_given = await admission_store.get_for_end(
            conn, agent_id="a1", episode_id=started.episode.id, vector=given, k=3,
            min_similarity=0.7,
        )  # fmt: skip
    assert by_stored is not None and by_given is not None
    assert by_stored.candidates == []
    assert by_stored.searched is by_stored.vector
    assert [c.id for c, _ in by_given.candidates] == [done.episode.id]
    assert by_given.searched is given


@pytest.fixture
async def promotable(
    pg_dsn: str, drop_schema: str, clock: FrozenClock, embedder: FakeEmbedder
) -> AsyncIterator[MemoryKernel]:
    """A kernel that gives an agent its own HNSW partition from 100 rows on."""
    config = schema_config(drop_schema, storage={"dedicated_partition_rows": 100})
    async with MemoryKernel.open(pg_dsn, config=config, clock=clock, embedder=embedder) as k:
        yield k


async def test_admission_through_an_own_hnsw_partition_finds_the_duplicate(
    promotable: MemoryKernel, embedder: FakeEmbedder
) -> None:
    kernel, now = promotable, promotable.clock.now()
    topics = [f"Rebuild the search index of shard {i} after schema change {i}" for i in range(150)]
    vectors = await embedder.embed(topics)
    rows = [
        {
            "agent_id": "a1",
            "id": uuid.uuid4(),
            "session_id": "seed",
            "summary": t,
            "status": "completed",
            "outcome": "success",
            "admission": "active",
            "embedding": v,
            "started_at": now - timedelta(days=1),
            "ended_at": now - timedelta(days=1),
            "created_at": now,
            "updated_at": now,
        }
        for t, v in zip(topics, vectors, strict=True)
    ]
    async with kernel.database.transaction() as conn:
        await conn.execute(episodes.insert(), rows)
    promoted = await rebalance(kernel.database, now)
    assert any(p.table == "episodes" and p.agent_id == "a1" for p in promoted)
    assert kernel.config.storage.hnsw_ef_search > ADMISSION_EF_SEARCH
    again = await run(kernel, "success", summary=topics[42])
    assert again.decision is AdmissionDecision.NOT
    assert again.target_id == rows[42]["id"]


# -- audit -----------------------------------------------------------------------------------


async def test_a_merge_records_how_many_group_members_moved(kernel: MemoryKernel) -> None:
    first = await run(kernel, "success", references=["A"])
    second = await run(kernel, "success", references=["B"])
    assert second.decision is AdmissionDecision.MERGE
    assert (await admission_event(kernel, second.episode.id))["details"]["repointed"] == 0
    third = await run(kernel, "success", references=["C"])
    assert third.decision is AdmissionDecision.MERGE
    # The new canonical takes over the group: ``first`` moves from ``second`` to it.
    assert (await admission_event(kernel, third.episode.id))["details"]["repointed"] == 1
    member = await kernel.heart.episodes.get(first.episode.id, agent_id="a1")
    assert member.canonical_id == third.episode.id
    assert (await admission_event(kernel, first.episode.id))["details"]["repointed"] == 0


async def test_merge_groups_are_indexed_in_every_partition(promotable: MemoryKernel) -> None:
    # Repointing a group (a REPLACE of its head) must not scan the agent's whole partition.
    kernel, now = promotable, promotable.clock.now()
    rows = [
        {"agent_id": "a1", "id": uuid.uuid4(), "session_id": "seed", "summary": f"task {i}",
         "status": "completed", "outcome": "success", "admission": "active",
         "started_at": now, "created_at": now, "updated_at": now}
        for i in range(150)
    ]  # fmt: skip
    async with kernel.database.transaction() as conn:
        await conn.execute(episodes.insert(), rows)
    promoted = await rebalance(kernel.database, now)
    (partition,) = [p.partition for p in promoted if p.table == "episodes"]
    async with kernel.database.connection() as conn:
        found = await conn.scalars(
            text("SELECT indexdef FROM pg_indexes WHERE tablename = :t"), {"t": partition}
        )
        definitions = list(found)
    assert any("(agent_id, canonical_id)" in d and "canonical_id IS NOT NULL" in d
               for d in definitions), definitions  # fmt: skip
