"""Admission with the default rule judge: the seed's four scenarios, their effects, the audit
trail and search exclusion, on a real Postgres."""

from __future__ import annotations

import asyncio
import uuid

import numpy as np
import pytest
from sqlalchemy import func, select

from memory_kernel import MemoryKernel, NotFoundError, ValidationError
from memory_kernel.models.enums import AdmissionStatus, DecidedBy, EpisodeStatus, EventKind
from memory_kernel.models.episodes import AdmissionDecision, EpisodeInput
from memory_kernel.runtime import Vector
from memory_kernel.storage.tables import episodes
from memory_kernel.storage.vector import as_array
from memory_kernel.testing import FakeEmbedder, FrozenClock
from tests.heart.episodes.conftest import TASK, admission_event, events_of, run


async def _search_ids(kernel: MemoryKernel, query: str = TASK) -> set[uuid.UUID]:
    return {h.episode.id for h in await kernel.heart.episodes.search("a1", query, k=10)}


async def test_first_run_is_added_by_the_prefilter(kernel: MemoryKernel) -> None:
    end = await run(kernel, "success", references=["docs/schema.md"])
    assert end.decision is AdmissionDecision.ADD
    assert end.decided_by is DecidedBy.RULE
    assert end.target_id is None and end.similarity is None and end.judge_error is None
    assert end.reason == "no similar admitted run"
    ep = end.episode
    assert ep.status is EpisodeStatus.COMPLETED and ep.admission is AdmissionStatus.ACTIVE
    assert ep.outcome == "success" and ep.references == ("docs/schema.md",)
    assert ep.ended_at == kernel.clock.now()
    assert await _search_ids(kernel) == {ep.id}


async def test_identical_run_with_same_outcome_is_not_admitted(kernel: MemoryKernel) -> None:
    first = await run(kernel, "success", references=["A"])
    second = await run(kernel, "success", references=["A"])
    assert second.decision is AdmissionDecision.NOT
    assert second.target_id == first.episode.id
    assert second.similarity is not None and second.similarity > 0.99
    assert "near-identical" in second.reason
    assert second.episode.admission is AdmissionStatus.NOT_ADMITTED
    assert not second.episode.retrievable
    assert await _search_ids(kernel) == {first.episode.id}


async def test_success_replaces_failure_of_the_same_task(kernel: MemoryKernel) -> None:
    old = await run(kernel, "failure")
    new = await run(kernel, "success")
    assert new.decision is AdmissionDecision.REPLACE
    assert new.target_id == old.episode.id
    assert "succeeded where the old one failed" in new.reason
    superseded = await kernel.heart.episodes.get(old.episode.id, agent_id="a1")
    assert superseded.admission is AdmissionStatus.SUPERSEDED
    assert superseded.superseded_by == new.episode.id
    assert await _search_ids(kernel) == {new.episode.id}
    # Kept for audit, with the event on the old run pointing at the new one.
    old_events = await events_of(kernel, old.episode.id)
    assert old_events[-1]["event"] == EventKind.SUPERSEDED
    assert old_events[-1]["related_id"] == new.episode.id


async def test_two_successes_with_different_references_merge(kernel: MemoryKernel) -> None:
    old = await run(kernel, "success", references=["A", "shared"], artifacts=["x.sql"])
    assert await kernel.heart.episodes.record_use(agent_id="a1", episode_ids=[old.episode.id]) == 1
    await kernel.heart.episodes.record_use(agent_id="a1", episode_ids=[old.episode.id])
    new = await run(kernel, "success", references=["B", "shared"], artifacts=["y.sql"])
    assert new.decision is AdmissionDecision.MERGE
    assert new.target_id == old.episode.id
    assert "different references" in new.reason
    # The newer success is canonical and carries the aggregate.
    canon = new.episode
    assert canon.canonical and canon.canonical_id is None
    assert canon.usage_count == 2
    assert canon.references == ("A", "shared", "B")
    assert canon.artifacts == ("x.sql", "y.sql")
    member = await kernel.heart.episodes.get(old.episode.id, agent_id="a1")
    assert not member.canonical and member.canonical_id == canon.id
    assert member.admission is AdmissionStatus.ACTIVE
    assert await _search_ids(kernel) == {old.episode.id, canon.id}


async def test_merge_groups_keep_one_canonical_and_do_not_double_count(
    kernel: MemoryKernel,
) -> None:
    first = await run(kernel, "success", references=["A"])
    await kernel.heart.episodes.record_use(agent_id="a1", episode_ids=[first.episode.id] * 1)
    second = await run(kernel, "success", references=["B"])
    await kernel.heart.episodes.record_use(agent_id="a1", episode_ids=[second.episode.id])
    third = await run(kernel, "success", references=["C"])
    assert third.decision is AdmissionDecision.MERGE
    ids = [first.episode.id, second.episode.id, third.episode.id]
    eps = [await kernel.heart.episodes.get(i, agent_id="a1") for i in ids]
    assert [e.canonical for e in eps] == [False, False, True]
    assert eps[0].canonical_id == eps[1].canonical_id == third.episode.id
    assert eps[2].usage_count == 2  # 1 + 1, each use counted once
    assert eps[2].references == ("A", "B", "C")


async def test_failure_after_success_is_added_by_the_rules(kernel: MemoryKernel) -> None:
    await run(kernel, "success")
    end = await run(kernel, "failure: timeout")
    assert end.decision is AdmissionDecision.ADD
    assert end.decided_by is DecidedBy.RULE
    assert "none is redundant" in end.reason
    event = await admission_event(kernel, end.episode.id)
    assert event["details"]["stage"] == "rules"


async def test_unrelated_run_is_added(kernel: MemoryKernel) -> None:
    await run(kernel, "success")
    end = await run(kernel, "success", summary="Rotate the TLS certificates of the edge proxies")
    assert end.decision is AdmissionDecision.ADD
    assert end.reason == "no similar admitted run"


async def test_every_decision_is_an_audit_record(kernel: MemoryKernel, clock: FrozenClock) -> None:
    old = await run(kernel, "failure")
    clock.advance(minutes=5)
    new = await run(kernel, "success")
    event = await admission_event(kernel, new.episode.id)
    assert event["event"] == EventKind.ADMISSION_REPLACE
    assert event["related_id"] == old.episode.id
    assert event["reason"] == new.reason
    assert event["score"] == pytest.approx(new.similarity)
    assert event["decided_by"] == DecidedBy.RULE
    assert event["created_at"] == clock.now()
    assert event["details"]["stage"] == "rules"
    assert event["details"]["judge"] is None
    assert event["details"]["candidates"][0]["id"] == str(old.episode.id)
    kinds = [e["event"] for e in await events_of(kernel, new.episode.id)]
    assert kinds == [
        EventKind.EPISODE_STARTED,
        EventKind.EPISODE_ENDED,
        EventKind.ADMISSION_REPLACE,
    ]


async def test_end_changes_summary_and_reembeds_only_then(
    kernel: MemoryKernel, embedder: FakeEmbedder
) -> None:
    started = await kernel.heart.episodes.start(
        EpisodeInput(agent_id="a1", session_id="s1", summary="working on it")
    )
    calls = embedder.calls
    end = await kernel.heart.episodes.end(
        started.episode.id, agent_id="a1", outcome="success", summary=TASK
    )
    assert embedder.calls == calls + 1
    assert end.episode.summary == TASK
    assert await _search_ids(kernel) == {end.episode.id}
    again = await kernel.heart.episodes.start(
        EpisodeInput(agent_id="a1", session_id="s1", summary="Rotate the proxy certificates")
    )
    calls = embedder.calls
    await kernel.heart.episodes.end(again.episode.id, agent_id="a1", outcome="success")
    assert embedder.calls == calls  # the stored vector was reused


async def _stored(
    kernel: MemoryKernel, episode_id: uuid.UUID, word: str
) -> tuple[str, Vector, bool]:
    """The row's summary, vector, and whether its full-text column matches ``word``."""
    async with kernel.database.connection() as conn:
        row = (
            await conn.execute(
                select(
                    episodes.c.summary,
                    episodes.c.embedding,
                    episodes.c.search_tsv.op("@@")(func.plainto_tsquery("english", word)),
                ).where(episodes.c.agent_id == "a1", episodes.c.id == episode_id)
            )
        ).one()
    vector = as_array(row[1])
    assert vector is not None
    return row[0], vector, row[2]


async def test_end_writes_the_summary_and_its_vector_only_when_they_change(
    kernel: MemoryKernel, embedder: FakeEmbedder
) -> None:
    started = await kernel.heart.episodes.start(
        EpisodeInput(agent_id="a1", session_id="s1", summary="working on it")
    )
    await kernel.heart.episodes.end(
        started.episode.id, agent_id="a1", outcome="success", summary=TASK
    )
    summary, vector, matches = await _stored(kernel, started.episode.id, "schema")
    assert summary == TASK and matches  # the full-text column follows the new summary
    assert np.array_equal(vector, (await embedder.embed([TASK]))[0])
    kept = await kernel.heart.episodes.start(
        EpisodeInput(agent_id="a1", session_id="s2", summary="Rotate the proxy certificates")
    )
    _, before, _ = await _stored(kernel, kept.episode.id, "proxy")
    await kernel.heart.episodes.end(kept.episode.id, agent_id="a1", outcome="success")
    summary, after, matches = await _stored(kernel, kept.episode.id, "proxy")
    assert summary == "Rotate the proxy certificates" and matches
    assert np.array_equal(after, before)


async def test_embedder_down_at_end_still_ends_and_adds(
    kernel: MemoryKernel, embedder: FakeEmbedder
) -> None:
    await run(kernel, "success")
    embedder.fail = RuntimeError("down")
    end = await run(kernel, "success")
    assert end.decision is AdmissionDecision.ADD
    assert end.reason.startswith("no embedding")
    assert end.episode.status is EpisodeStatus.COMPLETED


async def test_search_falls_back_to_text_when_the_embedder_fails(
    kernel: MemoryKernel, embedder: FakeEmbedder
) -> None:
    first = await run(kernel, "failure")
    second = await run(kernel, "success")  # replaces the first
    await kernel.heart.episodes.start(EpisodeInput(agent_id="a1", session_id="s", summary=TASK))
    embedder.fail = RuntimeError("down")
    hits = await kernel.heart.episodes.search("a1", "orders schema", k=5)
    assert [h.episode.id for h in hits] == [second.episode.id]
    assert first.episode.id not in {h.episode.id for h in hits}
    assert hits[0].similarity == pytest.approx(1.0)


async def test_search_excludes_ongoing_and_other_agents(kernel: MemoryKernel) -> None:
    mine = await run(kernel, "success")
    await run(kernel, "success", agent="a2")
    await kernel.heart.episodes.start(
        EpisodeInput(agent_id="a1", session_id="s", summary=TASK + " again")
    )
    hits = await kernel.heart.episodes.search("a1", TASK, k=10)
    assert [h.episode.id for h in hits] == [mine.episode.id]
    assert hits[0].similarity == pytest.approx(1.0, abs=1e-5)


async def test_concurrent_identical_ends_admit_one(
    kernel: MemoryKernel, clock: FrozenClock
) -> None:
    ids = []
    for _ in range(4):
        started = await kernel.heart.episodes.start(
            EpisodeInput(agent_id="a1", session_id="s", summary=TASK)
        )
        ids.append(started.episode.id)
        clock.advance(minutes=31)  # past the dedup window: four separate episodes
    ends = await asyncio.gather(
        *(kernel.heart.episodes.end(i, agent_id="a1", outcome="success") for i in ids)
    )
    decisions = sorted(e.decision for e in ends)
    assert decisions == ["ADD", "NOT", "NOT", "NOT"]
    assert len(await _search_ids(kernel)) == 1


async def test_ending_twice_or_unknown_ids_fail_cleanly(kernel: MemoryKernel) -> None:
    end = await run(kernel, "success")
    with pytest.raises(ValidationError, match="already ended"):
        await kernel.heart.episodes.end(end.episode.id, agent_id="a1", outcome="success")
    with pytest.raises(NotFoundError):
        await kernel.heart.episodes.end(uuid.uuid4(), agent_id="a1", outcome="success")
    with pytest.raises(NotFoundError):  # another agent's episode does not exist for a2
        await kernel.heart.episodes.end(end.episode.id, agent_id="a2", outcome="success")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"outcome": ""},
        {"outcome": "ok\x00"},
        {"outcome": "ok", "references": "not-a-list"},
        {"outcome": "ok", "references": ["fine", 3]},
        {"outcome": "ok", "artifacts": ["x" * (64 * 1024 + 1)]},
        {"outcome": "ok", "agent_id": "bad agent"},
    ],
)
async def test_bad_end_input_writes_nothing(
    kernel: MemoryKernel, kwargs: dict[str, object]
) -> None:
    started = await kernel.heart.episodes.start(
        EpisodeInput(agent_id="a1", session_id="s1", summary=TASK)
    )
    args: dict[str, object] = {"agent_id": "a1", **kwargs}
    with pytest.raises(ValidationError):
        await kernel.heart.episodes.end(started.episode.id, **args)  # type: ignore[arg-type]
    ep = await kernel.heart.episodes.get(started.episode.id, agent_id="a1")
    assert ep.status is EpisodeStatus.ONGOING


async def test_bad_search_input(kernel: MemoryKernel) -> None:
    for bad in ({"query": ""}, {"query": "x", "k": 0}, {"query": "x", "k": True}):
        args = {"query": "x", "k": 5, **bad}
        with pytest.raises(ValidationError):
            await kernel.heart.episodes.search("a1", args["query"], k=args["k"])  # type: ignore[arg-type]
