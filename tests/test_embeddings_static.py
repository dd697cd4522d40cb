"""StaticEmbedder (model2vec token vectors) and HybridEmbedder (hashing + static)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from memory_kernel import EmbedderMismatchError, FactInput, MemoryKernel
from memory_kernel.embeddings import (
    HYBRID_NAME,
    HashingEmbedder,
    HybridEmbedder,
    StaticEmbedder,
    default_embedder,
)
from memory_kernel.embeddings.static import PACKAGED_STATIC_MODEL
from memory_kernel.errors import ConfigError
from memory_kernel.heart.facts.scorers import load_scorers
from memory_kernel.storage import reembed
from tests.conftest import schema_config

# The distilled table as scripts/distill_static_model.py writes it (deterministic: PCA by
# eigendecomposition): a changed file must come with a re-run of the script.
MODEL_SHA256 = "48c3c456cdaeb0ae6d1dafe128bfee940e111f85945aea2552633490b440a605"

FACTS = [
    "The user drives an electric car.",
    "The user's sister lives in Leeds.",
    "The user prefers tea over coffee.",
    "The staging server is often down on Mondays.",
    "The user's dog is called Biscuit.",
    "Dana is allergic to penicillin.",
    "The quarterly report is due on Friday.",
]
# Questions that share no content word with the fact that answers them.
ASKED = {
    "what kind of vehicle do they own": "The user drives an electric car.",
    "which medication must be avoided": "Dana is allergic to penicillin.",
    "what is the pet's name": "The user's dog is called Biscuit.",
}


@pytest.fixture(scope="module")
def static() -> StaticEmbedder:
    return StaticEmbedder.packaged()


def _best(facts: np.ndarray, query: np.ndarray) -> str:
    return FACTS[int(np.argmax(facts @ query))]


def test_the_packaged_table_is_the_distilled_one() -> None:
    digest = hashlib.sha256((PACKAGED_STATIC_MODEL / "model.safetensors").read_bytes())
    assert digest.hexdigest() == MODEL_SHA256
    assert (PACKAGED_STATIC_MODEL / "NOTICE").is_file()
    assert (PACKAGED_STATIC_MODEL / "LICENSE-APACHE-2.0.txt").is_file()


async def test_static_vectors_are_unit_float32_and_deterministic(static: StaticEmbedder) -> None:
    first = await static.embed(FACTS)
    again = await StaticEmbedder.packaged().embed(FACTS)
    assert static.name == "static:minilm-l6-v2-128" and static.dim == 128
    assert first.shape == (len(FACTS), 128) and first.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(first, again)
    assert (await static.embed([])).shape == (0, 128)


async def test_a_batch_off_the_event_loop_gives_the_same_vectors(static: StaticEmbedder) -> None:
    many = [f"{fact} ({i})" for i in range(100) for fact in FACTS[:3]]  # 300 > the threshold
    together = await static.embed(many)
    alone = await static.embed(many[:5])
    np.testing.assert_allclose(together[:5], alone, atol=1e-6)


async def test_the_static_half_finds_what_the_lexical_one_cannot(static: StaticEmbedder) -> None:
    hashing = HashingEmbedder()
    lexical_facts, semantic_facts = await hashing.embed(FACTS), await static.embed(FACTS)
    lexical_hits = semantic_hits = 0
    for question, answer in ASKED.items():
        lexical_hits += _best(lexical_facts, (await hashing.embed([question]))[0]) == answer
        semantic_hits += _best(semantic_facts, (await static.embed([question]))[0]) == answer
    assert semantic_hits == len(ASKED)
    assert lexical_hits < len(ASKED)


def test_a_directory_without_a_model_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no model2vec model"):
        StaticEmbedder(tmp_path)


async def test_the_hybrid_cosine_is_the_mean_of_its_halves(static: StaticEmbedder) -> None:
    hybrid = HybridEmbedder()
    assert (hybrid.name, hybrid.dim) == (HYBRID_NAME, 384 + 128)
    pair = ["Maya runs the Atlas project.", "Maya manages the Atlas project."]
    lexical = await HashingEmbedder().embed(pair)
    semantic = await static.embed(pair)
    both = await hybrid.embed(pair)
    expected = 0.5 * float(lexical[0] @ lexical[1]) + 0.5 * float(semantic[0] @ semantic[1])
    assert float(both[0] @ both[1]) == pytest.approx(expected, abs=1e-5)
    np.testing.assert_allclose(np.linalg.norm(both, axis=1), 1.0, atol=1e-5)


async def test_the_hybrid_keeps_a_text_one_half_cannot_read_at_unit_length() -> None:
    hybrid = HybridEmbedder()
    # The lexical half reads no word of punctuation and emoji, the static half some.
    out = await hybrid.embed(["🙂🙂", "", "?!"])
    norms = np.linalg.norm(out, axis=1)
    assert np.all((np.abs(norms - 1.0) < 1e-5) | (norms == 0.0))


def test_a_hybrid_of_other_parts_or_shares_is_named_for_them(static: StaticEmbedder) -> None:
    other = HybridEmbedder(HashingEmbedder(dim=256), static, semantic_share=0.3)
    assert other.name == "hybrid:hashing-v1-256+static:minilm-l6-v2-128@0.3"
    assert other.dim == 256 + 128
    with pytest.raises(ConfigError, match="semantic_share"):
        HybridEmbedder(semantic_share=1.0)


def test_the_hybrid_gets_the_fact_scorers_fitted_with_it() -> None:
    assert load_scorers(None, HYBRID_NAME).embedder == HYBRID_NAME


async def test_a_kernel_on_the_hybrid_recalls_a_fact_by_its_meaning(
    pg_dsn: str, drop_schema: str
) -> None:
    config = schema_config(drop_schema)
    async with MemoryKernel.open(pg_dsn, config=config, embedder=HybridEmbedder()) as kernel:
        for content in FACTS:
            await kernel.heart.facts.learn(FactInput(agent_id="a1", content=content))
        for question, answer in ASKED.items():
            hits = await kernel.search_memory("a1", question, search_type="facts", limit=1)
            assert [hit.text for hit in hits] == [answer], question


async def test_a_kernel_opened_without_an_embedder_is_on_the_hybrid(
    pg_dsn: str, drop_schema: str
) -> None:
    config = schema_config(drop_schema)
    async with MemoryKernel.open(pg_dsn, config=config) as kernel:
        assert kernel.embedder.name == HYBRID_NAME == default_embedder().name
        assert (await kernel.info()).embedder_dim == 512
        assert kernel.heart.facts.scorers.embedder == HYBRID_NAME
        await kernel.heart.facts.learn(FactInput(agent_id="a1", content=FACTS[0]))
        question, answer = next(iter(ASKED.items()))
        hits = await kernel.search_memory("a1", question, search_type="facts", limit=1)
    assert [hit.text for hit in hits] == [FACTS[0]] == [answer]


async def test_a_store_built_on_the_old_default_says_how_to_open_it(
    pg_dsn: str, drop_schema: str
) -> None:
    config = schema_config(drop_schema)
    async with MemoryKernel.open(pg_dsn, config=config, embedder=HashingEmbedder()) as kernel:
        await kernel.heart.facts.learn(FactInput(agent_id="a1", content=FACTS[0]))
    with pytest.raises(EmbedderMismatchError) as caught:
        await MemoryKernel.open(pg_dsn, config=config)
    assert "embedder=HashingEmbedder()" in str(caught.value)
    assert "docs/reliability.md" in str(caught.value)
    async with MemoryKernel.open(pg_dsn, config=config, embedder=HashingEmbedder()) as kernel:
        assert len(await kernel.heart.facts.search("a1", FACTS[0])) == 1


def test_the_packaged_model_is_loaded_once_per_process() -> None:
    first, second = StaticEmbedder.packaged(), StaticEmbedder.packaged()
    assert first is not second
    assert first._model is second._model  # one table shared, not loaded twice


async def test_a_store_on_the_old_default_moves_to_the_default_as_documented(
    pg_dsn: str, drop_schema: str
) -> None:
    """docs/reliability.md: re-embed from a kernel on the HashingEmbedder, then open with no
    embedder; the facts are found by their meaning, which hashing alone could not do."""
    config = schema_config(drop_schema)
    async with MemoryKernel.open(pg_dsn, config=config, embedder=HashingEmbedder()) as kernel:
        for content in FACTS:
            await kernel.heart.facts.learn(FactInput(agent_id="a1", content=content))
        question, answer = next(iter(ASKED.items()))
        before = await kernel.search_memory("a1", question, search_type="facts", limit=1)
        report = await reembed.reembed(kernel.database, HybridEmbedder(), kernel.clock.now())
    assert [hit.text for hit in before] != [answer]
    assert report.embedder_name == HYBRID_NAME and report.embedded >= len(FACTS)
    async with MemoryKernel.open(pg_dsn, config=config) as kernel:
        assert (await kernel.info()).embedder_name == HYBRID_NAME
        for question, answer in ASKED.items():
            hits = await kernel.search_memory("a1", question, search_type="facts", limit=1)
            assert [hit.text for hit in hits] == [answer], question
