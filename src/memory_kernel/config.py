"""One frozen configuration tree.

Every threshold lives here with its default and the reason for it; docs/configuration.md is
the reference. Thresholds belong to one embedder: they were measured with the default
``HashingEmbedder`` on the development data (``memory-kernel eval``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from memory_kernel.errors import ConfigError

__all__ = [
    "BrainConfig",
    "ConsolidationConfig",
    "ContextConfig",
    "HeartConfig",
    "MemoryKernelConfig",
    "StorageConfig",
]

_IDENTIFIER = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class StorageConfig(_Frozen):
    """Where and how memories are stored."""

    schema_name: str = Field(default="memory_kernel", description="Postgres schema of our tables.")
    pool_size: int = Field(default=10, ge=1, le=1000)
    max_overflow: int = Field(default=10, ge=0, le=1000)
    connect_timeout_s: float = Field(default=10.0, gt=0)
    # An agent whose rows exceed this gets its own partition with an HNSW index; below it an
    # exact scan of its rows is cheaper than an ANN index and always complete.
    dedicated_partition_rows: int = Field(default=2000, ge=100)
    # Candidate list size of the HNSW scan: recall >= 0.98 at 10k rows/agent (benchmarks/search.py).
    hnsw_ef_search: int = Field(default=100, ge=10, le=1000)
    hnsw_m: int = Field(default=16, ge=4, le=100)
    hnsw_ef_construction: int = Field(default=64, ge=16, le=1000)
    embed_timeout_s: float = Field(default=10.0, gt=0)

    @field_validator("schema_name")
    @classmethod
    def _valid_schema(cls, value: str) -> str:
        # The schema name ends up in DDL and search_path, so only plain identifiers pass.
        if not _IDENTIFIER.match(value):
            raise ValueError("schema_name must be a lowercase SQL identifier (a-z, 0-9, _)")
        return value


class HeartConfig(_Frozen):
    """Facts and episodes."""

    max_content_bytes: int = Field(default=64 * 1024, ge=64)
    default_confidence: float = Field(default=0.7, ge=0.0, le=1.0)
    episode_dedup_window_s: float = Field(default=30 * 60, ge=0)
    episode_dedup_overlap: float = Field(default=0.7, ge=0.0, le=1.0)
    # Embedding side of start dedup (catches rewordings word overlap misses): with the
    # HashingEmbedder, cosine > 0.85 is a paraphrase 94% of the time on MRPC (dev data).
    episode_dedup_similarity: float = Field(default=0.85, ge=0.0, le=1.0)
    # Bound on the ongoing episodes compared per start; a burst of starts stays cheap.
    episode_dedup_scan: int = Field(default=50, ge=1, le=10_000)
    admission_similarity: float = Field(default=0.7, ge=0.0, le=1.0)
    # Facts (heart/facts/relation.py). Measured with HashingEmbedder on eval/dev: the dedup
    # pairs' paraphrases score cosine 0.34-0.76 (the embedder is lexical), so the cosine only
    # admits candidates and word rules decide; 0.33 keeps all five dev paraphrases.
    fact_dedup_similarity: float = Field(default=0.33, ge=0.0, le=1.0)
    # Share of content words two duplicates must have in common (dev paraphrases: 0.50-0.80).
    fact_dedup_coverage: float = Field(default=0.5, ge=0.0, le=1.0)
    # New content words a rewording may add per side: dev paraphrases add <= 2; LoCoMo
    # observations that only share a topic add 3+ (checked on locomo_dev observations).
    fact_dedup_max_novel_words: int = Field(default=2, ge=0)
    # A changed value / swapped slot counts as an update from this cosine (dev value-change
    # pairs: 0.64-0.88; same-frame paraphrases of LoCoMo observations rarely pass 0.6).
    fact_update_similarity: float = Field(default=0.6, ge=0.0, le=1.0)
    # Below this cosine nothing is compared (lowest dev knowledge update: 0.21, yoga).
    fact_update_floor: float = Field(default=0.18, ge=0.0, le=1.0)
    # Same head + this share of the other content words = same slot (dev KU pairs: 0.33-0.5).
    fact_update_shared: float = Field(default=0.3, ge=0.0, le=1.0)
    # Opposite polarity is a contradiction from this cosine (dev flips: 0.74-0.93; below
    # 0.65 negations in long LoCoMo observations flag unrelated statements).
    fact_contradiction_similarity: float = Field(default=0.65, ge=0.0, le=1.0)
    # Nearest current facts compared with each new fact.
    fact_neighbours: int = Field(default=8, ge=1, le=100)
    # The seed's "top 1-3 similar runs": enough context for the judge, small prompts.
    admission_candidates: int = Field(default=3, ge=1, le=20)
    # NOT needs a near-identical run: the seed's "very high similarity" (0.95)...
    admission_not_similarity: float = Field(default=0.95, ge=0.0, le=1.0)
    # ...or nearly the same words (and still the same task, see below).
    admission_not_overlap: float = Field(default=0.9, ge=0.0, le=1.0)
    # REPLACE/MERGE need the same task; the seed's examples sit at 0.88-0.92, and below
    # 0.85 two different tasks (deploy A / deploy B) would replace each other.
    admission_same_task_similarity: float = Field(default=0.85, ge=0.0, le=1.0)
    # An LLM judge that has not answered by then is abandoned and the rules decide.
    admission_judge_timeout_s: float = Field(default=20.0, gt=0)


class BrainConfig(_Frozen):
    """Decisions."""

    dedup_window_s: float = Field(default=5 * 60, ge=0)
    dedup_cosine: float = Field(default=0.85, ge=0.0, le=1.0)
    # Fallback when the embedder is down: keyword containment over content words. Containment
    # is more generous than cosine (a short text inside a longer one scores 1.0), hence higher.
    dedup_containment: float = Field(default=0.8, ge=0.0, le=1.0)
    # How many of the session's most recent decisions dedup compares with (the seed's 5).
    dedup_recent_limit: int = Field(default=5, ge=1, le=100)
    min_description_chars: int = Field(default=20, ge=0)
    auto_deliberation_frames: frozenset[str] = frozenset({"decision", "debug"})


class ContextConfig(_Frozen):
    """Context assembly."""

    token_budget: int = Field(default=1500, ge=1)
    # A JSON file in the original pre-parser's format; None: the packaged default.
    relevance_config: str | None = None
    # The seed's "top 3-5" streamed per node, chosen from its "top 20 candidates".
    passive_limit: int = Field(default=5, ge=1, le=100)
    candidate_pool: int = Field(default=20, ge=1, le=1000)
    # Seed thresholds: passive recall only trusts confidence > 0.5; the explicit tool > 0.3.
    passive_min_confidence: float = Field(default=0.5, ge=0.0, le=1.0)
    active_min_confidence: float = Field(default=0.3, ge=0.0, le=1.0)
    # Seed diversity sampling: cosine >= 0.8 is the same cluster, one memory per cluster.
    diversity_similarity: float = Field(default=0.8, ge=0.0, le=1.0)
    # Seed decision recall dedup: word overlap > 0.7 is the same decision (keep the newest).
    decision_overlap: float = Field(default=0.7, ge=0.0, le=1.0)
    # Recency term of the score halves every this many days: a year, so recency breaks ties
    # without burying months-old memories (LoCoMo dev: 30 days cost 5 points of recall@10).
    recency_half_life_days: float = Field(default=365.0, gt=0)
    # Share of the similarity term taken by the IDF-weighted full-text score (the rest is the
    # cosine); 0.3 was best on LoCoMo dev with the HashingEmbedder (0.2-0.5 within 2 points).
    lexical_weight: float = Field(default=0.3, ge=0.0, le=1.0)
    # Episodes carry no confidence; an admitted episode counts like a default-confidence fact.
    episode_confidence: float = Field(default=0.7, ge=0.0, le=1.0)
    # Passive prefetch: a cached recall older than this is not used by the next turn.
    prefetch_ttl_s: float = Field(default=300.0, gt=0)
    prefetch_max_sessions: int = Field(default=1000, ge=1)
    prefetch_max_tasks: int = Field(default=8, ge=1)


class ConsolidationConfig(_Frozen):
    """Nightly maintenance."""

    # Seed: c *= exp(-0.01 * days since last evidence), about 10% per 10 days.
    decay_per_day: float = Field(default=0.01, ge=0.0)
    # Smaller decays are not written: they accumulate (the decay clock is not reset) until
    # they matter or cross a retrieval tier (ContextConfig thresholds, deprecate_below).
    # Each write of an active fact re-inserts it into the HNSW index (~1 ms), so writing
    # every nightly 1% decay would make a run cost as much as rebuilding the index.
    decay_min_change: float = Field(default=0.05, ge=0.0, le=1.0)
    # Seed thresholds: < 0.3 deprecated; 0.3-0.5 active tool only; > 0.5 both recall modes.
    deprecate_below: float = Field(default=0.3, ge=0.0, le=1.0)
    # Seed: a completed episode this similar to a fact is evidence for it.
    evidence_similarity: float = Field(default=0.75, ge=0.0, le=1.0)
    # Facts an episode can support per run (nearest first): bounds one kNN per episode.
    evidence_neighbours: int = Field(default=32, ge=1, le=1000)
    # Seed auto-merge: cosine > 0.85, same category, no contradiction, one member > 0.6.
    merge_similarity: float = Field(default=0.85, ge=0.0, le=1.0)
    merge_min_confidence: float = Field(default=0.6, ge=0.0, le=1.0)
    # Duplicates between this and merge_similarity are ambiguous: the judge decides.
    ambiguous_similarity: float = Field(default=0.75, ge=0.0, le=1.0)
    # Seed: opposite polarity above 0.85 is a clear contradiction (both halved); between
    # HeartConfig.fact_contradiction_similarity and this it is ambiguous (judge).
    contradiction_similarity: float = Field(default=0.85, ge=0.0, le=1.0)
    # Neighbours per fact in the candidate search: duplicate clusters larger than this are
    # still joined through union-find (each member finds some others).
    neighbours: int = Field(default=8, ge=1, le=100)
    # Candidate search (consolidation/candidates.py): facts per coarse cell and cells each
    # fact searches. With the HashingEmbedder's near-random vectors, 8 probes of 256-fact
    # cells find 90-95% of the planted duplicate pairs at 100k facts (2 probes: 70%); the
    # cost is n * probes * cell_size cosines.
    candidate_cell_size: int = Field(default=256, ge=16, le=10_000)
    candidate_probes: int = Field(default=8, ge=1, le=64)
    # HNSW candidate list of the evidence search (episodes -> nearest facts): supporting
    # episodes (> 0.75) are among the first found; the recall setting would be 3x slower.
    evidence_ef_search: int = Field(default=20, ge=10, le=1000)
    # Facts per round trip and per write transaction: bounds memory and lock time.
    batch_size: int = Field(default=500, ge=10, le=10_000)
    # Seed: one batched LLM call per kind (contradictions, merges) per run.
    judge_max_calls: int = Field(default=2, ge=0, le=100)
    judge_max_items: int = Field(default=50, ge=1, le=10_000)
    judge_timeout_s: float = Field(default=60.0, gt=0)
    # Pending facts embedded per round by the drain and the background worker.
    pending_batch: int = Field(default=256, ge=1, le=10_000)
    # The kernel's background embedding worker (the queue is the facts table).
    embed_worker: bool = True
    embed_worker_poll_s: float = Field(default=2.0, gt=0)
    # A pending fact younger than this waits for the next poll, so bursts are embedded in
    # one batch (and a learn that just failed to embed is not retried at once).
    embed_worker_grace_s: float = Field(default=5.0, ge=0)
    embed_worker_backoff_max_s: float = Field(default=60.0, gt=0)
    # consolidate_all: agents consolidated at once by one process.
    concurrency: int = Field(default=2, ge=1, le=256)


class MemoryKernelConfig(_Frozen):
    """The whole configuration; build it in code or load it with :meth:`from_file`."""

    storage: StorageConfig = StorageConfig()
    heart: HeartConfig = HeartConfig()
    brain: BrainConfig = BrainConfig()
    context: ContextConfig = ContextConfig()
    consolidation: ConsolidationConfig = ConsolidationConfig()

    @classmethod
    def from_mapping(cls, data: dict[str, Any]) -> Self:
        """Validate a plain mapping; broken input raises :class:`ConfigError`."""
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(f"invalid memory-kernel configuration: {exc}") from exc

    @classmethod
    def from_file(cls, path: str | Path) -> Self:
        """Load a JSON configuration file."""
        try:
            text = Path(path).read_text(encoding="utf-8")
            return cls.model_validate_json(text)
        except OSError as exc:
            raise ConfigError(f"cannot read configuration {path}: {exc}") from exc
        except ValidationError as exc:
            raise ConfigError(f"invalid memory-kernel configuration in {path}: {exc}") from exc
