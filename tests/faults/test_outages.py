"""Embedder and judge outages: nothing is dropped, the caller is told, and the work is
finished later. A broken embedder (raising, hanging past its timeout, or answering NaN /
wrong-dimension vectors) stores facts as ``pending_embed`` — found by full-text search
meanwhile, embedded once it is back; decisions and episodes are stored without a vector.
A judge that is down or answers garbage leaves the rule decision, recorded as such."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

import numpy as np
import pytest
from rich.console import Console
from sqlalchemy import func, select

from memory_kernel import ConsolidationAction, DecidedBy, FactStatus, MemoryKernel
from memory_kernel.inspection_render import render_inspection
from memory_kernel.models.episodes import EpisodeInput
from memory_kernel.models.facts import FactInput, FactMatch
from memory_kernel.models.turns import TurnInput, TurnOutcome
from memory_kernel.storage.tables import decisions, episodes, turns
from memory_kernel.storage.vector import as_array
from memory_kernel.testing import FakeEmbedder, FrozenClock, ScriptedJudge
from memory_kernel.vectors import FloatMatrix
from tests.conftest import QUIET, schema_config

pytestmark = pytest.mark.faults

DECISION = (
    "We'll use PostgreSQL with pgvector rather than a separate vector database, because it "
    "keeps transactions and embeddings in one place."
)


class GarbageEmbedder(FakeEmbedder):
    """Answers with NaN vectors or vectors of the wrong dimension while ``garbage`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.garbage: str | None = None

    async def embed(self, texts: Sequence[str]) -> FloatMatrix:
        good = await super().embed(texts)
        if self.garbage == "nan":
            return np.full_like(good, np.nan)
        if self.garbage == "dim":
            return np.ones((len(texts), self.dim + 1), dtype=np.float32)
        return good


@pytest.fixture
async def outage_kernel(
    pg_dsn: str, drop_schema: str, clock: FrozenClock
) -> AsyncIterator[tuple[MemoryKernel, GarbageEmbedder]]:
    embedder = GarbageEmbedder()
    config = schema_config(
        drop_schema,
        storage={"embed_timeout_s": 0.2, "index_worker": False},
        consolidation={"embed_worker": False},
    )
    async with MemoryKernel.open(pg_dsn, config=config, clock=clock, embedder=embedder) as k:
        yield k, embedder


def _break(embedder: GarbageEmbedder, how: str) -> None:
    if how == "raises":
        embedder.fail = RuntimeError("embedding service unavailable")
    elif how == "times-out":
        embedder.delay_s = 1.0
    else:
        embedder.garbage = how


def _mend(embedder: GarbageEmbedder) -> None:
    embedder.fail, embedder.delay_s, embedder.garbage = None, 0.0, None


@pytest.mark.parametrize("how", ["raises", "times-out", "nan", "dim"])
async def test_facts_learned_during_an_embedder_outage_are_kept_and_caught_up(
    outage_kernel: tuple[MemoryKernel, GarbageEmbedder], how: str
) -> None:
    kernel, embedder = outage_kernel
    _break(embedder, how)
    fact = FactInput(agent_id="a", subject="db", content="The billing database runs Postgres 17")
    outcome = await kernel.heart.facts.learn(fact)
    assert outcome.pending_embedding, "the caller is told the fact has no vector yet"
    assert outcome.fact.status is FactStatus.PENDING_EMBED
    hits = await kernel.heart.facts.search("a", "billing database Postgres")
    assert [(h.fact.id, h.matched_by) for h in hits] == [(outcome.fact.id, FactMatch.TEXT)]
    _mend(embedder)
    report = await kernel.heart.facts.embed_pending("a")
    assert report.embedded == 1
    hits = await kernel.heart.facts.search("a", "billing database Postgres")
    assert hits[0].fact.id == outcome.fact.id and hits[0].matched_by is FactMatch.VECTOR
    assert hits[0].fact.status is FactStatus.ACTIVE


@pytest.mark.parametrize(
    "how",
    [
        "raises",
        "times-out",
        "nan",
        "dim",
    ],
)
async def test_turns_during_an_embedder_outage_record_everything(
    outage_kernel: tuple[MemoryKernel, GarbageEmbedder], how: str
) -> None:
    kernel, embedder = outage_kernel
    _break(embedder, how)
    turn = TurnInput(agent_id="a", session_id="s", message="Which store?", frame="decision")
    ctx = await kernel.pre_turn(turn)
    result = await kernel.post_turn(ctx.turn, TurnOutcome(response_text=DECISION))
    assert result.decision is not None and result.decision.description
    episode = await kernel.heart.episodes.get(ctx.turn.episode_id, agent_id="a")
    assert episode.metadata.get("turns") == 1
    left_out = await _vectorless(kernel)
    assert left_out == {"episodes": 1, "turns": 2, "decisions": 1}
    # Still down at the nightly run: reported, nothing changed; the next run catches up.
    report = await kernel.consolidate("a")
    assert "without a vector" in (report.agents[0].error or "")
    assert await _vectorless(kernel) == left_out
    _mend(embedder)
    rehearsed = await kernel.consolidate("a", dry_run=True)
    assert rehearsed.agents[0].counts[ConsolidationAction.VECTORS_FILLED] == 4
    assert await _vectorless(kernel) == left_out
    done = await kernel.consolidate("a")
    assert done.agents[0].counts[ConsolidationAction.VECTORS_FILLED] == 4
    assert await _vectorless(kernel) == {"episodes": 0, "turns": 0, "decisions": 0}
    async with kernel.database.connection() as conn:
        vector = await conn.scalar(select(turns.c.embedding).where(turns.c.content == DECISION))
    stored = as_array(vector)
    assert stored is not None
    assert np.allclose(stored, (await embedder.embed([DECISION]))[0], atol=1e-6)


async def test_the_nightly_run_finds_agents_with_nothing_but_vectorless_memories(
    outage_kernel: tuple[MemoryKernel, GarbageEmbedder],
) -> None:
    kernel, embedder = outage_kernel
    _break(embedder, "raises")
    ctx = await kernel.pre_turn(TurnInput(agent_id="quiet", session_id="s", message="Hi there"))
    await kernel.post_turn(ctx.turn, TurnOutcome(response_text="Hello, how can I help?"))
    await kernel.end_session("quiet", "s")  # no facts, nothing ongoing, nothing queued
    _mend(embedder)
    seen = await kernel.inspect("quiet")
    assert seen.without_vector == {"episodes": 1, "turns": 2}
    shown = Console(record=True, width=200)
    render_inspection(seen, shown)
    assert "without a vector" in (text := shown.export_text()) and "episodes 1, turns 2" in text

    report = await kernel.consolidate_all()

    (run,) = [a for a in report.agents if a.agent_id == "quiet"]
    assert run.counts[ConsolidationAction.VECTORS_FILLED] == 3  # two turns and the episode
    assert await _vectorless(kernel) == {"episodes": 0, "turns": 0, "decisions": 0}
    assert (await kernel.inspect("quiet")).without_vector == {}


async def _vectorless(kernel: MemoryKernel) -> dict[str, int]:
    async with kernel.database.connection() as conn:
        return {
            t.name: int(
                await conn.scalar(
                    select(func.count()).select_from(t).where(t.c.embedding.is_(None))
                )
                or 0
            )
            for t in (episodes, turns, decisions)
        }


async def test_a_judge_that_is_down_or_talks_garbage_leaves_the_rule_decision(
    pg_dsn: str, drop_schema: str, clock: FrozenClock, embedder: FakeEmbedder
) -> None:
    judge = ScriptedJudge(["not json at all", {"decision": "EXPLODE"}])
    config = schema_config(drop_schema, **QUIET)
    async with MemoryKernel.open(
        pg_dsn, config=config, clock=clock, embedder=embedder, judge=judge
    ) as kernel:
        ends = []
        for refs in (["A"], ["B"], ["C"]):
            start = await kernel.heart.episodes.start(_episode())
            ends.append(
                await kernel.heart.episodes.end(
                    start.episode.id, agent_id="a", outcome="success", references=refs
                )
            )
            clock.advance(hours=2)  # a new episode each time, not the ongoing one
        judge.fail = ConnectionError("judge unreachable")
        start = await kernel.heart.episodes.start(_episode())
        ends.append(
            await kernel.heart.episodes.end(
                start.episode.id, agent_id="a", outcome="success", references=["D"]
            )
        )
    judged = [e for e in ends if e.judge_error is not None]
    assert len(judged) >= 2, "the judge was asked and failed (garbage, then down)"
    for end in judged:
        assert end.decided_by is DecidedBy.RULE
        assert end.episode.id  # stored, with a decision
    assert all(e.decision is not None for e in ends)


def _episode() -> EpisodeInput:
    return EpisodeInput(
        agent_id="a", session_id="s", summary="Deploy the billing service to production"
    )
