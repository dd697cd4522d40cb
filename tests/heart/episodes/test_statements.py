"""The lean SQL of start and end: statement counts, cacheable statements, the lock taken by
the window read, the guarded insert, transaction-local ef_search, and admission through an
agent's own HNSW partition."""

from __future__ import annotations

import uuid
import weakref
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import func, select, text

from memory_kernel import MemoryKernel
from memory_kernel.heart.episodes import admission_sql as reads
from memory_kernel.heart.episodes import repository as repo
from memory_kernel.heart.episodes import writes
from memory_kernel.heart.episodes.dedup import OngoingEpisode
from memory_kernel.heart.episodes.ending import ADMISSION_EF_SEARCH
from memory_kernel.heart.episodes.rows import new_row, started_event
from memory_kernel.heart.episodes.writes import Seen
from memory_kernel.models.enums import EventKind
from memory_kernel.models.episodes import AdmissionDecision, EpisodeInput, EpisodeStart
from memory_kernel.storage import driver, locks
from memory_kernel.storage.partitions import rebalance
from memory_kernel.storage.tables import episodes, memory_events
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


async def test_a_start_is_three_statements(kernel: MemoryKernel) -> None:
    # BEGIN travels with the lock: four round trips with the COMMIT.
    with statements(kernel) as sent:
        created = await kernel.heart.episodes.start(_ep(STATUS))
    assert not created.deduplicated
    assert len(sent) == 3, sent  # BEGIN + lock, window read, insert + event
    assert sent[0].startswith("BEGIN; SELECT pg_advisory_xact_lock(")
    with statements(kernel) as sent:
        reused = await kernel.heart.episodes.start(_ep(STATUS, session="s2"))
    assert reused.deduplicated and reused.episode.id == created.episode.id
    assert len(sent) == 3, sent  # BEGIN + lock, window read, touch + event


async def test_an_end_is_three_statements_four_with_a_target(kernel: MemoryKernel) -> None:
    with statements(kernel) as sent:
        first = await run(kernel, "failure")
    assert first.decision is AdmissionDecision.ADD
    assert len(sent) == 3 + 3, sent  # the start; BEGIN + lock, episode + search, write
    with statements(kernel) as sent:
        second = await run(kernel, "success")
    assert second.decision is AdmissionDecision.REPLACE
    assert len(sent) == 3 + 4, sent  # ... and the target, locked


class _CountingCache(weakref.WeakKeyDictionary[Any, Any]):
    """``driver._COMPILED`` that counts the statements compiled."""

    compiled = 0

    def __setitem__(self, key: Any, value: Any) -> None:
        self.compiled += 1
        super().__setitem__(key, value)


async def test_hot_path_statements_are_compiled_once(
    kernel: MemoryKernel, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``driver.core`` compiles a statement object once: start and end must reuse prebuilt
    statements (one per shape), never build one per call."""
    cache = _CountingCache()
    monkeypatch.setattr(driver, "_COMPILED", cache)

    async def round_of(agent: str) -> None:
        assert (await run(kernel, "failure", agent=agent)).decision is AdmissionDecision.ADD
        assert (await run(kernel, "success", agent=agent)).decision is AdmissionDecision.REPLACE

    await round_of("a1")
    first = cache.compiled
    await round_of("a2")
    await round_of("a3")
    assert first > 0 and cache.compiled == first


# -- the start lock and the guarded insert -------------------------------------------------


async def test_the_window_read_takes_the_start_lock_even_when_empty(kernel: MemoryKernel) -> None:
    key = locks.lock_number("mk-episode-start", "a1")
    probe = text("SELECT pg_try_advisory_xact_lock(:key)")
    async with kernel.database.transaction() as holder:
        found = await repo.recent_ongoing(
            holder,
            agent_id="a1",
            since=kernel.clock.now() - timedelta(minutes=30),
            vector=None,
            limit=50,
            lock="start",
        )
        assert found == []
        async with kernel.database.transaction() as other:
            assert await other.scalar(probe, {"key": key}) is False
    async with kernel.database.transaction() as other:
        assert await other.scalar(probe, {"key": key}) is True


def _stale_window(
    monkeypatch: pytest.MonkeyPatch, stale: list[OngoingEpisode]
) -> list[OngoingEpisode]:
    """Make the locking window read return ``stale``, as a read whose snapshot predates a
    concurrent commit would; later reads are real."""
    real = repo.recent_ongoing

    async def read(conn: Any, **kwargs: Any) -> list[OngoingEpisode]:
        fresh = await real(conn, **kwargs)
        return list(stale) if kwargs.get("lock") is not None else fresh

    monkeypatch.setattr(repo, "recent_ongoing", read)
    return stale


async def _start_in(kernel: MemoryKernel, episode: EpisodeInput) -> EpisodeStart:
    # In a caller's transaction the window read takes the start lock itself, so its
    # snapshot may predate the grant: the path these tests drive (``start`` opens its own
    # transaction with the lock instead).
    async with kernel.database.transaction() as conn:
        return await kernel.heart.episodes.start_in(conn, episode)


async def test_a_start_that_missed_a_concurrent_one_reuses_it(
    kernel: MemoryKernel, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = await kernel.heart.episodes.start(_ep(STATUS))
    _stale_window(monkeypatch, [])  # the read did not see ``first``
    again = await _start_in(kernel, _ep(STATUS, session="s2"))
    assert again.deduplicated and again.episode.id == first.episode.id
    assert await _count(kernel) == 1


async def test_a_start_never_reuses_an_episode_ended_after_the_read(
    kernel: MemoryKernel, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = await kernel.heart.episodes.start(_ep(STATUS))
    await kernel.heart.episodes.end(first.episode.id, agent_id="a1", outcome="success")
    # The read still saw it ongoing: the end committed between the read and the reuse.
    _stale_window(monkeypatch, [OngoingEpisode(first.episode.id, STATUS, 1.0)])
    again = await _start_in(kernel, _ep(STATUS, session="s2"))
    assert not again.deduplicated and again.episode.id != first.episode.id
    kinds = [e["event"] for e in await events_of(kernel, first.episode.id)]
    assert EventKind.EPISODE_REUSED not in kinds


async def test_the_guarded_insert_writes_nothing_when_the_window_changed(
    kernel: MemoryKernel,
) -> None:
    now = kernel.clock.now()
    first = await kernel.heart.episodes.start(_ep(STATUS))
    row = new_row(_ep("Rotate the TLS certificates"), None, now)
    started = started_event(row, now)
    since = now - timedelta(minutes=30)
    async with kernel.database.transaction() as conn:
        stale = Seen(agent_id="a1", since=since, ids=[])
        assert await writes.create_in(conn, row, started, seen=stale) is None
        current = Seen(agent_id="a1", since=since, ids=[first.episode.id])
        created = await writes.create_in(conn, row, started, seen=current)
    assert created is not None and created.id == row["id"]
    async with kernel.database.connection() as conn:
        n = await conn.scalar(
            select(func.count())
            .select_from(memory_events)
            .where(memory_events.c.agent_id == "a1", memory_events.c.memory_id == row["id"])
        )
    assert n == 1  # the event of the refused insert was not written either


# -- ef_search and the HNSW path ------------------------------------------------------------


async def test_ef_search_is_lowered_for_the_end_transaction_only(kernel: MemoryKernel) -> None:
    started = await kernel.heart.episodes.start(_ep(TASK))
    configured = str(kernel.config.storage.hnsw_ef_search)
    show = "SELECT current_setting('hnsw.ef_search') AS ef"
    async with kernel.database.lean_transaction(reads.admission_opening("a1", 17)) as conn:
        found = await reads.get_for_end(
            conn, agent_id="a1", episode_id=started.episode.id, vector=None, k=3,
            min_similarity=0.7,
        )  # fmt: skip
        assert found is not None and found.episode.id == started.episode.id
        assert (await driver.fetch(conn, show, {}))[0].ef == "17"
    async with kernel.database.connection() as conn:
        assert (await driver.fetch(conn, show, {}))[0].ef == configured


async def test_the_end_read_searches_with_the_vector_given_else_the_stored_one(
    kernel: MemoryKernel,
) -> None:
    done = await run(kernel, "success")  # a completed episode of TASK
    other = "Translate the onboarding guide into German for the Berlin office"
    started = await kernel.heart.episodes.start(_ep(other))
    given = (await kernel.embedder.embed([TASK]))[0]
    async with kernel.database.lean_transaction(reads.admission_opening("a1", 40)) as conn:
        by_stored = await reads.get_for_end(
            conn, agent_id="a1", episode_id=started.episode.id, vector=None, k=3,
            min_similarity=0.7,
        )  # fmt: skip
        by_given = await reads.get_for_end(
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
