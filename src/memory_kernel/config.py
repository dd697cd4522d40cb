"""One frozen configuration tree.

Every threshold lives here with its default and the reason for it, in the field's
``description``: ``memory-kernel config --markdown`` renders them as docs/configuration.md
(a test keeps the two equal). Thresholds belong to one embedder: they were measured with the
default ``HashingEmbedder`` on the development data (``memory-kernel eval`` / ``tune``, see
docs/tuning.md).
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

    schema_name: str = Field(
        default="memory_kernel",
        description=(
            "Postgres schema of memory-kernel's tables; every connection sets its search_path"
            " to it, so the host application's tables are never touched."
        ),
    )
    pool_size: int = Field(
        default=10,
        ge=1,
        le=1000,
        description=(
            "Connections kept open in the pool: enough for a host running a few concurrent "
            "agent turns."
        ),
    )
    max_overflow: int = Field(
        default=10,
        ge=0,
        le=1000,
        description=(
            "Extra connections opened under a burst beyond pool_size and closed afterwards."
        ),
    )
    connect_timeout_s: float = Field(
        default=10.0,
        gt=0,
        description="Seconds to wait for a new connection before ConnectionFailedError.",
    )
    dedicated_partition_rows: int = Field(
        default=2000,
        ge=100,
        description=(
            "An agent with more rows than this gets its own partition with an HNSW index (at "
            "consolidation); below it an exact scan of its rows in the shared partition is "
            "cheaper than an ANN index and always complete."
        ),
    )
    hnsw_ef_search: int = Field(
        default=100,
        ge=10,
        le=1000,
        description=(
            "Candidate list size of the HNSW scan (per connection): recall >= 0.98 at 10k "
            "rows per agent (benchmarks/search.py)."
        ),
    )
    hnsw_m: int = Field(
        default=16,
        ge=4,
        le=100,
        description=(
            "HNSW graph degree of dedicated partitions: pgvector's default, a good "
            "recall/size balance for 384-1536 dimensions."
        ),
    )
    hnsw_ef_construction: int = Field(
        default=64,
        ge=16,
        le=1000,
        description=(
            "HNSW build-time candidate list: pgvector's default; higher builds slower for "
            "little recall at these sizes."
        ),
    )
    embed_timeout_s: float = Field(
        default=10.0,
        gt=0,
        description=(
            "An embedder call that has not answered by then raises EmbedderError (the write "
            "is not blocked forever by a slow model server)."
        ),
    )
    embedded_shared_buffers_mb: int | None = Field(
        default=None,
        ge=16,
        le=1_048_576,
        description=(
            "shared_buffers of the embedded server (ignored with a DSN: tune your own server)."
            " None = a quarter of the machine's (or container's) memory, between 128 MB and "
            "2048 MB: at 1M rows over 100 agents the HNSW indexes searched are ~2 GB; with "
            "Postgres's stock 128 MB a search read 415 of its 571 pages from the OS (server "
            "time p50 10.4 ms), with 2 GB none (1.0 ms; benchmarks/search.py --diagnose). "
            "Applied when the server starts; a server another process runs keeps its value "
            "until it restarts."
        ),
    )

    @field_validator("schema_name")
    @classmethod
    def _valid_schema(cls, value: str) -> str:
        # The schema name ends up in DDL and search_path, so only plain identifiers pass.
        if not _IDENTIFIER.match(value):
            raise ValueError("schema_name must be a lowercase SQL identifier (a-z, 0-9, _)")
        return value


class HeartConfig(_Frozen):
    """Facts and episodes."""

    max_content_bytes: int = Field(
        default=64 * 1024,
        ge=64,
        description=(
            "Largest fact or episode text accepted (UTF-8 bytes); bigger input is a "
            "ValidationError, so one huge paste cannot bloat the store or the context."
        ),
    )
    default_confidence: float = Field(
        default=0.7,
        ge=0.0,
        le=1.0,
        description=(
            "Confidence of a learned fact that gives none: above the passive recall floor "
            "(0.5), so a new fact is recalled until decay or contradictions lower it."
        ),
    )
    episode_dedup_window_s: float = Field(
        default=30 * 60,
        ge=0,
        description=(
            "A new episode start is compared with the agent's episodes started within this "
            'window (the seed\'s 30 minutes): a repeated "show me status" reuses the ongoing '
            "episode."
        ),
    )
    episode_dedup_overlap: float = Field(
        default=0.7,
        ge=0.0,
        le=1.0,
        description=(
            "Word overlap above which two episode starts in the window are the same task (the"
            " seed's 70%)."
        ),
    )
    episode_dedup_similarity: float = Field(
        default=0.85,
        ge=0.0,
        le=1.0,
        description=(
            "Embedding side of episode start dedup (catches rewordings that word overlap "
            "misses). HashingEmbedder: cosine > 0.85 is a paraphrase 94% of the time on MRPC "
            "dev; re-tune for another embedder (docs/tuning.md)."
        ),
    )
    episode_dedup_scan: int = Field(
        default=50,
        ge=1,
        le=10_000,
        description=(
            "Bound on the ongoing episodes compared per start, so a burst of starts stays cheap."
        ),
    )
    admission_similarity: float = Field(
        default=0.7,
        ge=0.0,
        le=1.0,
        description=(
            "Episode admission: finished runs at least this similar are the candidates a new "
            "run is compared with (ADD/NOT/REPLACE/MERGE); below it the run is added without "
            "asking the judge."
        ),
    )
    fact_dedup_similarity: float = Field(
        default=0.33,
        ge=0.0,
        le=1.0,
        description=(
            "Cosine from which a current fact is a dedup candidate for a new one "
            "(heart/facts/relation.py). HashingEmbedder on eval dev: the dedup pairs' "
            "paraphrases score 0.34-0.76 (the embedder is lexical), so the cosine only admits"
            " candidates and word rules decide; 0.33 keeps all dev paraphrases. Per embedder:"
            " memory-kernel tune dedup."
        ),
    )
    fact_dedup_coverage: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description=(
            "Share of content words two duplicates must have in common (dev paraphrases: "
            "0.50-0.80)."
        ),
    )
    fact_dedup_max_novel_words: int = Field(
        default=2,
        ge=0,
        description=(
            "New content words a rewording may add per side: dev paraphrases add <= 2; LoCoMo"
            " observations that only share a topic add 3+ (checked on locomo dev "
            "observations)."
        ),
    )
    fact_update_similarity: float = Field(
        default=0.6,
        ge=0.0,
        le=1.0,
        description=(
            "Cosine from which a changed value or swapped slot counts as an update that "
            "supersedes the old fact (dev value-change pairs: 0.64-0.88; same-frame "
            "paraphrases of LoCoMo observations rarely pass 0.6)."
        ),
    )
    fact_update_floor: float = Field(
        default=0.18,
        ge=0.0,
        le=1.0,
        description=(
            "Below this cosine no relation is considered at all (lowest dev knowledge update:"
            " 0.21, yoga)."
        ),
    )
    fact_update_shared: float = Field(
        default=0.3,
        ge=0.0,
        le=1.0,
        description=(
            "Same head word plus this share of the other content words = the same slot, so a "
            "new value supersedes the old one (dev knowledge-update pairs: 0.33-0.5)."
        ),
    )
    fact_contradiction_similarity: float = Field(
        default=0.65,
        ge=0.0,
        le=1.0,
        description=(
            "Opposite polarity is a contradiction from this cosine (dev flips: 0.74-0.93; "
            "below 0.65 negations in long LoCoMo observations flag unrelated statements)."
        ),
    )
    fact_neighbours: int = Field(
        default=8,
        ge=1,
        le=100,
        description=(
            "Nearest current facts compared with each new fact (dedup, update, contradiction)."
        ),
    )
    admission_candidates: int = Field(
        default=3,
        ge=1,
        le=20,
        description=(
            "Similar finished runs shown to the episode judge: the seed's \"top 1-3 similar "
            'runs", enough context for the judge with small prompts.'
        ),
    )
    admission_not_similarity: float = Field(
        default=0.95,
        ge=0.0,
        le=1.0,
        description=(
            "An episode is NOT admitted (a repeat) when a candidate is this similar: the "
            'seed\'s "very high similarity" (0.95)...'
        ),
    )
    admission_not_overlap: float = Field(
        default=0.9,
        ge=0.0,
        le=1.0,
        description=(
            "...or when it has nearly the same words (and is still the same task, see "
            "admission_same_task_similarity)."
        ),
    )
    admission_same_task_similarity: float = Field(
        default=0.85,
        ge=0.0,
        le=1.0,
        description=(
            "REPLACE/MERGE of an episode need the same task: the seed's examples sit at "
            "0.88-0.92, and below 0.85 two different tasks (deploy A / deploy B) would "
            "replace each other."
        ),
    )
    admission_judge_timeout_s: float = Field(
        default=20.0,
        gt=0,
        description=(
            "An LLM judge that has not answered by then is abandoned and the rules decide."
        ),
    )


class BrainConfig(_Frozen):
    """Decisions."""

    dedup_window_s: float = Field(
        default=5 * 60,
        ge=0,
        description=(
            "A new decision is compared with the session's decisions of this window (5 "
            "minutes): it catches a repeat within the conversation."
        ),
    )
    dedup_cosine: float = Field(
        default=0.85,
        ge=0.0,
        le=1.0,
        description=(
            "Cosine above which a decision duplicates one of the session's recent decisions "
            "(the seed's 0.85)."
        ),
    )
    dedup_containment: float = Field(
        default=0.8,
        ge=0.0,
        le=1.0,
        description=(
            "Fallback when the embedder is down: keyword containment over content words. "
            "Containment is more generous than cosine (a short text inside a longer one "
            "scores 1.0), hence higher."
        ),
    )
    dedup_recent_limit: int = Field(
        default=5,
        ge=1,
        le=100,
        description=(
            "How many of the session's most recent decisions dedup compares with (the seed's 5)."
        ),
    )
    min_description_chars: int = Field(
        default=20,
        ge=0,
        description=(
            "Quality gate: a decision description shorter than this (after stripping) is "
            "rejected as too_short: no room for a decision and its reason."
        ),
    )
    auto_deliberation_frames: frozenset[str] = Field(
        default=frozenset({"decision", "debug"}),
        description=(
            "Frames in which pre_turn starts a deliberation (a draft decision) automatically "
            "and post_turn may finalise it (the seed's decision/debug frames)."
        ),
    )


class ContextConfig(_Frozen):
    """Context assembly."""

    token_budget: int = Field(
        default=1500,
        ge=1,
        description="Default token budget of an assembled context when the request gives none.",
    )
    relevance_config: str | None = Field(
        default=None,
        description=(
            "A JSON file in the original pre-parser's format; None: the packaged default."
        ),
    )
    passive_limit: int = Field(
        default=5,
        ge=1,
        le=100,
        description=('Memories streamed per node: the seed\'s "top 3-5".'),
    )
    candidate_pool: int = Field(
        default=20,
        ge=1,
        le=1000,
        description=(
            "Candidates fetched per node before scoring, from which passive_limit are chosen:"
            ' the seed\'s "top 20 candidates".'
        ),
    )
    passive_min_confidence: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description=(
            "Passive recall (injected every turn) only trusts facts with confidence above "
            "this (the seed's 0.5)."
        ),
    )
    active_min_confidence: float = Field(
        default=0.3,
        ge=0.0,
        le=1.0,
        description=(
            "The explicit recall tool shows facts down to this confidence (the seed's 0.3): "
            "the agent asked, so weaker memories are worth seeing."
        ),
    )
    diversity_similarity: float = Field(
        default=0.8,
        ge=0.0,
        le=1.0,
        description=(
            "Diversity sampling: memories at this cosine or above are one cluster, and one "
            "memory per cluster is kept (the seed's 0.8)."
        ),
    )
    decision_overlap: float = Field(
        default=0.7,
        ge=0.0,
        le=1.0,
        description=(
            "Decision recall dedup: word overlap above this is the same decision, and the "
            "newest is kept (the seed's 0.7)."
        ),
    )
    recency_half_life_days: float = Field(
        default=365.0,
        gt=0,
        description=(
            "The recency term of the score halves every this many days: a year, so recency "
            "breaks ties without burying months-old memories (LoCoMo dev: 30 days cost 5 "
            "points of recall@10)."
        ),
    )
    lexical_weight: float = Field(
        default=0.3,
        ge=0.0,
        le=1.0,
        description=(
            "Share of the similarity term taken by the IDF-weighted full-text score (the rest"
            " is the cosine); 0.3 was best on LoCoMo dev with the HashingEmbedder (0.2-0.5 "
            "within 2 points)."
        ),
    )
    episode_confidence: float = Field(
        default=0.7,
        ge=0.0,
        le=1.0,
        description=(
            "Episodes carry no confidence; an admitted episode counts like a default-"
            "confidence fact."
        ),
    )
    prefetch_ttl_s: float = Field(
        default=300.0,
        gt=0,
        description=(
            "Passive prefetch: a cached recall older than this is not used by the next turn."
        ),
    )
    prefetch_max_sessions: int = Field(
        default=1000,
        ge=1,
        description=(
            "Sessions whose prefetched recall is cached (the most recent ones): bounds the "
            "cache's memory."
        ),
    )
    prefetch_max_tasks: int = Field(
        default=8,
        ge=1,
        description=(
            "Prefetches running at once; more are skipped, not queued, so a burst of turns "
            "cannot pile up work."
        ),
    )


class ConsolidationConfig(_Frozen):
    """Nightly maintenance."""

    decay_per_day: float = Field(
        default=0.01,
        ge=0.0,
        description=(
            "Confidence decay: c *= exp(-decay_per_day * days since the last evidence) (the "
            "seed's 0.01, about 10% per 10 days)."
        ),
    )
    decay_min_change: float = Field(
        default=0.05,
        ge=0.0,
        le=1.0,
        description=(
            "Smaller decays are not written: they accumulate (the decay clock is not reset) "
            "until they matter or cross a retrieval tier. Each write of an active fact re-"
            "inserts it into the HNSW index (~1 ms), so writing every nightly 1% decay would "
            "cost as much as rebuilding the index."
        ),
    )
    deprecate_below: float = Field(
        default=0.3,
        ge=0.0,
        le=1.0,
        description=(
            "Facts whose confidence falls below this are deprecated (the seed's tiers: < 0.3 "
            "deprecated; 0.3-0.5 active tool only; > 0.5 both recall modes)."
        ),
    )
    evidence_similarity: float = Field(
        default=0.75,
        ge=0.0,
        le=1.0,
        description=(
            "A completed episode this similar to a fact is evidence for it and refreshes its "
            "confidence (the seed's 0.75)."
        ),
    )
    evidence_neighbours: int = Field(
        default=32,
        ge=1,
        le=1000,
        description=(
            "Facts an episode can support per run (nearest first): bounds one kNN per episode."
        ),
    )
    merge_similarity: float = Field(
        default=0.85,
        ge=0.0,
        le=1.0,
        description=(
            "Auto-merge of duplicates: cosine above this, same category, no contradiction "
            "(the seed's 0.85)."
        ),
    )
    merge_min_confidence: float = Field(
        default=0.6,
        ge=0.0,
        le=1.0,
        description=(
            "Auto-merge also needs one member above this confidence (the seed's 0.6), so two "
            "weak facts do not reinforce each other."
        ),
    )
    ambiguous_similarity: float = Field(
        default=0.75,
        ge=0.0,
        le=1.0,
        description=(
            "Duplicates between this and merge_similarity are ambiguous: the judge decides."
        ),
    )
    contradiction_similarity: float = Field(
        default=0.85,
        ge=0.0,
        le=1.0,
        description=(
            "Opposite polarity above this is a clear contradiction and both facts are halved "
            "(the seed's 0.85); between HeartConfig.fact_contradiction_similarity and this it"
            " is ambiguous (judge)."
        ),
    )
    neighbours: int = Field(
        default=8,
        ge=1,
        le=100,
        description=(
            "Neighbours per fact in the candidate search: duplicate clusters larger than this"
            " are still joined through union-find (each member finds some others)."
        ),
    )
    candidate_cell_size: int = Field(
        default=256,
        ge=16,
        le=10_000,
        description=(
            "Candidate search (consolidation/candidates.py): facts per coarse cell. With the "
            "HashingEmbedder's near-random vectors, 8 probes of 256-fact cells find 90-95% of"
            " the planted duplicate pairs at 100k facts; the cost is n * probes * cell_size "
            "cosines."
        ),
    )
    candidate_probes: int = Field(
        default=8,
        ge=1,
        le=64,
        description=(
            "Cells each fact searches in the candidate search (8 probes: 90-95% of planted "
            "duplicates found at 100k facts; 2 probes: 70%)."
        ),
    )
    evidence_ef_search: int = Field(
        default=20,
        ge=10,
        le=1000,
        description=(
            "HNSW candidate list of the evidence search (episodes -> nearest facts): "
            "supporting episodes (> 0.75) are among the first found; the recall setting would"
            " be 3x slower."
        ),
    )
    batch_size: int = Field(
        default=500,
        ge=10,
        le=10_000,
        description=(
            "Facts per round trip and per write transaction: bounds memory and lock time."
        ),
    )
    judge_max_calls: int = Field(
        default=2,
        ge=0,
        le=100,
        description=(
            "LLM judge calls per run: the seed's one batched call per kind (contradictions, "
            "merges)."
        ),
    )
    judge_max_items: int = Field(
        default=50,
        ge=1,
        le=10_000,
        description=(
            "Cases sent in one judge call, most similar first; the others are left for a later run."
        ),
    )
    judge_timeout_s: float = Field(
        default=60.0,
        gt=0,
        description="A consolidation judge call that has not answered by then is abandoned.",
    )
    pending_batch: int = Field(
        default=256,
        ge=1,
        le=10_000,
        description=(
            "Pending (not yet embedded) facts embedded per round by the drain and the "
            "background worker."
        ),
    )
    embed_worker: bool = Field(
        default=True,
        description=(
            "Run the kernel's background embedding worker (the queue is the facts table): "
            "facts learned while the embedder was down get their vectors later."
        ),
    )
    embed_worker_poll_s: float = Field(
        default=2.0,
        gt=0,
        description="Seconds between the embedding worker's polls of pending facts.",
    )
    embed_worker_grace_s: float = Field(
        default=5.0,
        ge=0,
        description=(
            "A pending fact younger than this waits for the next poll, so bursts are embedded"
            " in one batch (and a learn that just failed to embed is not retried at once)."
        ),
    )
    embed_worker_backoff_max_s: float = Field(
        default=60.0,
        gt=0,
        description=(
            "Ceiling of the worker's exponential backoff while the embedder keeps failing."
        ),
    )
    concurrency: int = Field(
        default=2,
        ge=1,
        le=256,
        description="consolidate_all: agents consolidated at once by one process.",
    )


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
