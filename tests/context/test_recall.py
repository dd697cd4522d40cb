"""Pure recall policy: score, RRF, diversity sampling and decision dedup (the seed's Phase D
cases 21-26)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from memory_kernel import MemoryKernel
from memory_kernel.context.recall import (
    Candidate,
    ScoreWeights,
    dedup_decisions,
    diversity_sample,
    rank_candidates,
    recency,
    relevance_score,
    rrf,
)
from memory_kernel.context.retrieval import TermStats, candidates, term_stats, weigh
from memory_kernel.models.context import MemorySource
from memory_kernel.storage.tables import facts

NOW = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class D:
    decision: str
    created_at: datetime


def dedup(items: list[D]) -> list[D]:
    return dedup_decisions(items, text=lambda d: d.decision, created_at=lambda d: d.created_at)


def at(minutes: int) -> datetime:
    return NOW + timedelta(minutes=minutes)


# -- Phase D: decision recall dedup -----------------------------------------------------------


def test_21_five_similar_decisions_reduced_to_one() -> None:
    items = [
        D("Here's my full live status of the 006 context quality work", at(i)) for i in range(4)
    ] + [D("Here's my full live status of the 006 context quality work today", at(9))]
    assert dedup(items) == [items[-1]]


def test_22_three_distinct_decisions_all_kept() -> None:
    items = [
        D("Use Postgres advisory locks for consolidation workers", at(1)),
        D("Ship the HNSW index per agent partition", at(2)),
        D("Reject facts that are greetings or filler", at(3)),
    ]
    assert dedup(items) == items


def test_23_mix_of_similar_and_distinct() -> None:
    a1 = D("Deploy the search service to staging first", at(1))
    a2 = D("Deploy the search service to staging first today", at(5))
    b = D("Rotate the database credentials every quarter", at(2))
    c = D("Cache embeddings for repeated queries", at(3))
    assert dedup([a1, b, a2, c]) == [b, a2, c], "input order kept, newest duplicate kept"


def test_24_empty_list() -> None:
    assert dedup([]) == []


def test_25_single_decision_as_is() -> None:
    only = D("Adopt the new retry policy", at(0))
    assert dedup([only]) == [only]


def test_26_most_recent_duplicate_is_kept() -> None:
    old = D("Status: all systems nominal and green", at(0))
    new = D("Status: all systems nominal and green", at(30))
    older = D("Status: all systems nominal and green", at(-30))
    assert dedup([old, new, older]) == [new]


def test_dedup_threshold_is_strictly_greater_than() -> None:
    # 7 shared of 10 words = 0.7 exactly: not a duplicate (the seed's "> 0.7").
    a = D("one two three four five six seven eight nine ten", at(0))
    b = D("one two three four five six seven x y z", at(1))
    assert len(dedup([a, b])) == 2


# -- score, recency, RRF ----------------------------------------------------------------------


def test_relevance_score_weights() -> None:
    assert relevance_score(1.0, 1.0, 1.0, ScoreWeights()) == pytest.approx(1.0)
    assert relevance_score(0.5, 0.8, 0.2, ScoreWeights()) == pytest.approx(0.3 + 0.24 + 0.02)


def test_recency_halves_per_half_life() -> None:
    assert recency(NOW, NOW, half_life_days=30) == 1.0
    assert recency(NOW - timedelta(days=30), NOW, half_life_days=30) == pytest.approx(0.5)
    assert recency(NOW + timedelta(days=3), NOW, half_life_days=30) == 1.0


def test_rrf_rewards_agreement_between_rankings() -> None:
    fused = rrf([["a", "b", "c"], ["b", "c", "d"]])
    assert max(fused, key=lambda k: fused[k]) == "b"
    assert fused["a"] == pytest.approx(1 / 61)
    assert fused["d"] < fused["c"]


def cand(text: str, *, sim: float, conf: float = 0.7, days: float = 0, **ranks: int) -> Candidate:
    return Candidate(
        source=MemorySource.FACT,
        id=uuid.uuid4(),
        text=text,
        confidence=conf,
        created_at=NOW - timedelta(days=days),
        similarity=sim,
        **ranks,  # type: ignore[arg-type]
    )


def test_rank_candidates_orders_by_the_seed_score() -> None:
    strong = cand("strong", sim=0.9, vector_rank=1)
    confident = cand("confident", sim=0.55, conf=1.0, vector_rank=2)
    stale = cand("stale", sim=0.9, conf=0.7, days=365, vector_rank=3)
    hits = rank_candidates(
        [stale, confident, strong], now=NOW, half_life_days=30, lexical_weight=0.0
    )
    # stale: 0.54 + 0.21 + ~0; confident: 0.33 + 0.3 + 0.1 = 0.73.
    assert [h.text for h in hits] == ["strong", "stale", "confident"]
    top = hits[0]
    assert top.score == pytest.approx(0.6 * top.similarity + 0.3 * 0.7 + 0.1 * 1.0)


def test_lexical_matches_blend_into_the_similarity_term() -> None:
    rare = replace(cand("rare word", sim=0.5, vector_rank=2, text_rank=1), lexical=4.0)
    common = replace(cand("common word", sim=0.5, vector_rank=1, text_rank=2), lexical=1.0)
    hits = rank_candidates([common, rare], now=NOW, half_life_days=30, lexical_weight=0.3)
    assert [h.text for h in hits] == ["rare word", "common word"]
    assert hits[0].similarity == pytest.approx(0.7 * 0.5 + 0.3 * 1.0)
    assert hits[1].similarity == pytest.approx(0.7 * 0.5 + 0.3 * 0.25)
    cosine_only = rank_candidates([common, rare], now=NOW, half_life_days=30, lexical_weight=0)
    assert {h.similarity for h in cosine_only} == {0.5}


def test_rrf_chooses_the_pool() -> None:
    agreed = cand("agreed", sim=0.4, vector_rank=2, text_rank=2)
    vector_top = cand("vector top", sim=0.41, vector_rank=1)
    text_top = cand("text top", sim=0.1, text_rank=1)
    pool = rank_candidates([vector_top, text_top, agreed], now=NOW, half_life_days=30, pool=1)
    assert [h.text for h in pool] == ["agreed"]


# -- diversity --------------------------------------------------------------------------------


def test_diversity_keeps_the_best_of_each_cluster() -> None:
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=16), rng.normal(size=16)
    near_x = x + 0.01 * rng.normal(size=16)
    vectors = [v.astype(np.float32) for v in (x, near_x, y)]
    assert diversity_sample(["x", "x2", "y"], vectors, threshold=0.8) == ["x", "y"]
    assert diversity_sample(["x", "x2", "y"], vectors, threshold=0.8, limit=1) == ["x"]
    assert diversity_sample(["x", "x2", "y"], vectors, threshold=1.01) == ["x", "x2", "y"]


def test_items_without_vectors_are_their_own_cluster() -> None:
    v = np.ones(4, dtype=np.float32)
    assert diversity_sample(["a", "b", "c"], [v, None, v], threshold=0.8) == ["a", "b"]
    assert diversity_sample(["z"], [np.zeros(4, dtype=np.float32)]) == ["z"]


def test_a_word_in_most_of_many_rows_is_too_common_to_select_candidates() -> None:
    stats = TermStats(rows=5000, terms={"alice": ("'alic'", 3000), "zebra": ("'zebra'", 3)})
    common, rare = weigh(stats, ["alice", "zebra"])
    assert (common.rows, rare.rows) == (3000, 3)
    assert common.too_common and not rare.too_common
    assert rare.weight > common.weight > 0
    # In a small store every word selects: a name in half of 400 memories still matters.
    small = weigh(TermStats(rows=400, terms={"alice": ("'alic'", 200)}), ["alice"])
    assert not small[0].too_common


async def test_text_side_skips_too_common_words(kernel: MemoryKernel) -> None:
    """Over a thousand facts share the word "project": selecting candidates by it would
    score them all. The text side selects by the rare word only, and finds its fact."""
    rows = [
        {
            "agent_id": "big", "id": uuid.uuid4(), "content": f"project note {i} about item{i}",
            "confidence": 0.8, "status": "active", "embedding": None,
            "last_evidence_at": NOW, "valid_from": NOW, "created_at": NOW, "updated_at": NOW,
        }
        for i in range(1200)
    ]  # fmt: skip
    async with kernel.database.transaction() as conn:
        await conn.execute(facts.insert(), rows)
    async with kernel.database.connection() as conn:
        words = ["project", "item77"]
        stats = await term_stats(conn, MemorySource.FACT, agent_id="big", words=words,
                                 min_confidence=0.5)  # fmt: skip
        terms = weigh(stats, words)
        assert [t.too_common for t in terms] == [True, False]
        found = await candidates(conn, MemorySource.FACT, agent_id="big", query="project item77",
                                 vector=None, k=5, min_confidence=0.5, terms=terms)  # fmt: skip
        assert [c.text for c in found] == ["project note 77 about item77"]
        only_common = weigh(stats, ["project"])
        none = await candidates(
            conn, MemorySource.FACT, agent_id="big", query="project", vector=None, k=5,
            min_confidence=0.5, terms=only_common,
        )  # fmt: skip
        assert none == []
