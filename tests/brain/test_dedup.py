"""Layer 2's pure decision: cosine on vectors, keyword containment without them."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from memory_kernel.brain.dedup import RecentDecision, containment, find_duplicate
from memory_kernel.embeddings import HashingEmbedder
from memory_kernel.models.decisions import DedupMethod

EMB = HashingEmbedder()
A = "Cache user profiles in Redis for ten minutes to meet the latency budget."
A2 = "Cache the user profiles in Redis for ten minutes to meet our latency budget."
B = "Pin numpy below 3.0 until our dependencies publish compatible wheels."


def _recent(*texts: str, with_vectors: bool = True) -> list[RecentDecision]:
    vectors = EMB.embed_sync(list(texts))
    return [
        RecentDecision(id=uuid.uuid4(), description=t, embedding=v if with_vectors else None)
        for t, v in zip(texts, vectors, strict=True)
    ]


def _dup(text: str, recent: list[RecentDecision], *, vector: bool = True) -> bool:
    vec = EMB.embed_sync([text])[0] if vector else None
    return find_duplicate(
        text, vec, recent, cosine_threshold=0.85, containment_threshold=0.8
    ).duplicate


def test_near_identical_is_duplicate_by_cosine() -> None:
    recent = _recent(B, A)
    verdict = find_duplicate(
        A2, EMB.embed_sync([A2])[0], recent, cosine_threshold=0.85, containment_threshold=0.8
    )
    assert verdict.duplicate
    assert verdict.duplicate_of == recent[1].id
    assert verdict.method is DedupMethod.COSINE
    assert verdict.score >= 0.85


def test_different_decision_is_not_duplicate() -> None:
    assert not _dup(B, _recent(A))
    assert not _dup(B, _recent(A), vector=False)


def test_empty_recent_list() -> None:
    assert not _dup(A, [])


def test_keyword_fallback_when_either_side_lacks_a_vector() -> None:
    assert _dup(A2, _recent(A), vector=False)
    assert _dup(A2, _recent(A, with_vectors=False))
    verdict = find_duplicate(A2, None, _recent(A), cosine_threshold=0.85, containment_threshold=0.8)
    assert verdict.method is DedupMethod.KEYWORD


def test_containment_coefficient() -> None:
    assert containment(A, A) == pytest.approx(1.0)
    assert containment(A, B) == pytest.approx(0.0)
    # Shared content words over the smaller set; stopwords do not count.
    assert containment("deploy the api", "deploy the api gateway on friday") == 0.0  # < 3 words
    assert containment("deploy api gateway", "we deploy the api gateway on friday") == 1.0
    assert containment("the of and", "the of and") == 0.0


def test_zero_threshold_edges() -> None:
    recent = _recent(A)
    vec = np.zeros(EMB.dim, dtype=np.float32)
    # A zero vector has no direction: cosine is 0, never a duplicate at a positive threshold.
    assert not find_duplicate(
        A, vec, recent, cosine_threshold=0.85, containment_threshold=0.8
    ).duplicate


def test_a_decision_naming_other_numbers_is_never_a_duplicate() -> None:
    four = "Scale the checkout workers to 4 replicas for the sale."
    eight = "Scale the checkout workers to 8 replicas for the sale."
    vectors = EMB.embed_sync([four, eight])
    assert float(vectors[0] @ vectors[1]) > 0.6  # close vectors: only the number differs
    recent = _recent(four)
    for vector in (vectors[1], None):  # by cosine, and by keyword containment
        verdict = find_duplicate(
            eight, vector, recent, cosine_threshold=0.6, containment_threshold=0.6
        )
        assert not verdict.duplicate
