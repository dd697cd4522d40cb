"""Concurrency: many writers at once never break an invariant.

* 50 concurrent ``learn`` on one subject: exactly one current fact, the whole chain in its
  history (nothing lost, nothing forked);
* 20 concurrent ``start`` of the same episode: one episode;
* concurrent duplicate deliberations: one decision;
* two ``consolidate_all`` workers (two kernels, two pools): never the same agent at once.
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict

import pytest
from sqlalchemy import func, select, text

from memory_kernel import ConflictError, FactStatus, MemoryKernel, ValidationError
from memory_kernel.models.consolidation import AgentRunStatus, ConsolidationProgress
from memory_kernel.models.episodes import EpisodeInput
from memory_kernel.models.facts import FactInput, LearnAction
from memory_kernel.storage import locks
from memory_kernel.storage.tables import decisions, episodes, facts
from memory_kernel.testing import FakeEmbedder, FrozenClock, ScriptedJudge
from tests.conftest import QUIET, schema_config

pytestmark = pytest.mark.faults


async def _count(kernel: MemoryKernel, stmt: object) -> int:
    async with kernel.database.connection() as conn:
        return int(await conn.scalar(stmt) or 0)  # type: ignore[call-overload]


async def test_fifty_concurrent_learns_on_one_subject(kernel: MemoryKernel) -> None:
    inputs = [
        FactInput(
            agent_id="a",
            subject="deploy target",
            content=f"The billing service deploys to host number {i} in rack {i * 7}",
        )
        for i in range(50)
    ]
    outcomes = await asyncio.gather(*(kernel.heart.facts.learn(f) for f in inputs))
    stored = {o.fact.id for o in outcomes if o.action is not LearnAction.REJECTED}
    current = await _count(
        kernel,
        select(func.count()).where(
            facts.c.agent_id == "a",
            facts.c.subject_key.is_not(None),
            facts.c.status.in_([FactStatus.ACTIVE.value, FactStatus.PENDING_EMBED.value]),
        ),
    )
    assert current == 1
    chain = await kernel.heart.facts.history(next(iter(stored)), agent_id="a")
    assert {f.id for f in chain} == stored, "every stored fact is in the one history chain"
    retired = [f for f in chain if not f.is_current]
    assert all(f.superseded_by is not None for f in retired)
    assert len(chain) - len(retired) == 1


async def test_twenty_concurrent_starts_of_one_episode(kernel: MemoryKernel) -> None:
    episode = EpisodeInput(agent_id="a", session_id="s", summary="Migrate the billing database")
    started = await asyncio.gather(*(kernel.heart.episodes.start(episode) for _ in range(20)))
    assert len({s.episode.id for s in started}) == 1
    assert sum(not s.deduplicated for s in started) == 1
    assert await _count(kernel, select(func.count()).where(episodes.c.agent_id == "a")) == 1


async def test_concurrent_duplicate_deliberations_record_one(kernel: MemoryKernel) -> None:
    description = "Adopt PostgreSQL with pgvector as the only store for agent memory"
    ids = await asyncio.gather(
        *(kernel.brain.start("a", "s", description, frame="decision") for _ in range(10))
    )
    assert len([i for i in ids if i is not None]) == 1
    rows = await _count(
        kernel, select(func.count()).where(decisions.c.agent_id == "a", decisions.c.active)
    )
    assert rows == 1


async def test_two_consolidate_all_workers_never_share_an_agent(
    pg_dsn: str, drop_schema: str
) -> None:
    config = schema_config(drop_schema, **QUIET)
    clock, embedder = FrozenClock(), FakeEmbedder()
    first = await MemoryKernel.open(pg_dsn, config=config, clock=clock, embedder=embedder)
    second = await MemoryKernel.open(pg_dsn, config=config, clock=clock, embedder=embedder)
    try:
        agents = [f"agent-{i}" for i in range(6)]
        for agent in agents:
            await first.heart.facts.learn_many(
                [
                    FactInput(
                        agent_id=agent,
                        content=f"Team {agent} reviews topic {j} every week with lead {j % 3}",
                        defer_embedding=True,
                        explicit=True,
                    )
                    for j in range(25)
                ]
            )
        seen: dict[tuple[str, str], list[float]] = defaultdict(list)

        def recorder(worker: str) -> object:
            def record(progress: ConsolidationProgress) -> None:
                if progress.phase != "lock":  # before the try-lock: not yet "inside"
                    seen[(worker, progress.agent_id)].append(time.monotonic())

            return record

        reports = await asyncio.gather(
            first.consolidate_all(concurrency=3, progress=recorder("w1")),  # type: ignore[arg-type]
            second.consolidate_all(concurrency=3, progress=recorder("w2")),  # type: ignore[arg-type]
        )
    finally:
        await first.close()
        await second.close()
    for agent in agents:
        runs = [seen[(w, agent)] for w in ("w1", "w2") if seen[(w, agent)]]
        assert runs, f"nobody consolidated {agent}"
        if len(runs) == 2:
            (a0, a1), (b0, b1) = ((min(r), max(r)) for r in runs)
            assert a1 < b0 or b1 < a0, f"both workers were inside {agent} at once"
    statuses = [a.status for r in reports for a in r.agents]
    assert AgentRunStatus.FAILED not in statuses
    assert statuses.count(AgentRunStatus.DONE) >= len(agents)


async def _waits_on_advisory_lock(kernel: MemoryKernel, key: int) -> bool:
    """Whether some backend waits for the advisory lock ``key`` (a signed 64-bit number:
    Postgres shows its high and low halves as classid and objid)."""
    unsigned = key & 0xFFFFFFFFFFFFFFFF
    params = {"hi": unsigned >> 32, "lo": unsigned & 0xFFFFFFFF}
    async with kernel.database.connection() as conn:
        waiting = await conn.scalar(
            text(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
                " AND classid::bigint = :hi AND objid::bigint = :lo AND objsubid = 1"
            ),
            params,
        )
    return bool(waiting)


@pytest.mark.parametrize("judged", [False, True], ids=["rules", "judge"])
async def test_ending_an_episode_a_concurrent_call_ended_is_a_conflict(
    pg_dsn: str, drop_schema: str, judged: bool
) -> None:
    """Two processes end the same episode: the one that waited for the other is told of
    the race (``ConflictError``), not that its input was wrong (``ValidationError``, as
    before); ending an episode that had ended before the call stays a ``ValidationError``."""
    judge = ScriptedJudge(name="scripted") if judged else None
    async with MemoryKernel.open(
        pg_dsn, config=schema_config(drop_schema, **QUIET), clock=FrozenClock(),
        embedder=FakeEmbedder(), judge=judge,
    ) as kernel:  # fmt: skip
        episodes_ = kernel.heart.episodes
        start = await episodes_.start(
            EpisodeInput(agent_id="a", session_id="s", summary="Migrated billing to Postgres")
        )
        episode_id = start.episode.id
        key = locks.lock_number("mk-episode-admit", "a")
        held, release = asyncio.Event(), asyncio.Event()

        async def first() -> None:
            # The other process: it holds the agent's admission lock while it ends the
            # episode, and commits once the second call waits for that lock.
            async with kernel.database.transaction() as conn:
                await conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": key})
                held.set()
                await release.wait()
                await episodes_.end(episode_id, agent_id="a", outcome="success")

        holder = asyncio.create_task(first())
        await held.wait()
        second = asyncio.create_task(episodes_.end(episode_id, agent_id="a", outcome="failure"))
        for _ in range(500):
            if await _waits_on_advisory_lock(kernel, key):
                break
            await asyncio.sleep(0.01)
        else:
            raise AssertionError("the second end never waited for the admission lock")
        release.set()
        await holder
        with pytest.raises(ConflictError, match="concurrent"):
            await second
        ended = await episodes_.get(episode_id, agent_id="a")
        assert ended.outcome == "success"
        with pytest.raises(ValidationError, match="already ended"):
            await episodes_.end(episode_id, agent_id="a", outcome="failure")
