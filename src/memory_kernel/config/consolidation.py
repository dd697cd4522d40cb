"""Consolidation: the nightly run and the embedding worker."""

from __future__ import annotations

from pydantic import Field, field_validator

from memory_kernel.config._base import Frozen

__all__ = ["ConsolidationConfig"]


class ConsolidationConfig(Frozen):
    """Nightly maintenance."""

    decay_per_day: float = Field(
        default=0.01,
        ge=0.0,
        description=(
            "Confidence decay: c *= exp(-decay_per_day * days since the last evidence) (the "
            "seed's 0.01, about 10% per 10 days)."
        ),
    )
    steady_categories: tuple[str, ...] = Field(
        default=("preference",),
        description=(
            "Facts of these categories do not decay with time (evidence still reinforces "
            "them): what the user wants, a rule they keep, holds until they say otherwise (a "
            "newer value supersedes it) or it is erased, however long ago it was said."
        ),
    )
    turn_results_days: float = Field(
        default=30.0,
        gt=0.0,
        le=36500.0,
        description=(
            "How long post_turn remembers a recorded turn's result (what makes a repeated "
            "post_turn of one handle safe): consolidation deletes older ones, and post_turn "
            "refuses a handle started longer ago than this (ConflictError) instead of "
            "recording it a second time."
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
        default=0.88,
        ge=0.0,
        le=1.0,
        description=(
            "Auto-merge of duplicates: cosine above this, same category, no contradiction. "
            "0.88 with the default embedder (hybrid-v1-512) is as precise on paraphrases as "
            "the seed's 0.85 with the HashingEmbedder (docs/tuning.md)."
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
        default=0.88,
        ge=0.0,
        le=1.0,
        description=(
            "Opposite polarity above this is a clear contradiction and both facts are halved "
            "(the seed's 0.85 with the HashingEmbedder; 0.88 with the default embedder, as "
            "every 'same thing' cosine); between HeartConfig.fact_contradiction_similarity "
            "and this it is ambiguous (judge)."
        ),
    )
    judge_restatement_probability: float | None = Field(
        default=0.2,
        ge=0.0,
        le=1.0,
        description=(
            "With a judge only: a pair the fact rules leave open as a restatement and the "
            "duplicate scorer rates at least this (below its merge threshold) is an "
            "ambiguous merge the judge decides, down to HeartConfig.fact_dedup_similarity "
            "in cosine (heart/facts/restatement.py). Held out on the dev dedup pairs, 0.2 "
            "holds 9 of the 24 paraphrases learn leaves apart and 6 of the 50 pairs that "
            "must stay apart: a perfect judge would reach 0.85. It costs the nightly run "
            "more candidate pairs: at 1,591 facts 1,890 instead of 185, 0.5 s instead of "
            "0.2 s. None: off."
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
    judge_update_probability: float | None = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description=(
            "With a judge only: a pair the fact rules do not decide and the update scorer "
            "rates at least this as a newer value of the older fact's slot is an ambiguous "
            "conflict the judge decides (supersede or keep both), down to "
            "HeartConfig.fact_dedup_similarity in cosine, as the restatement band: the value "
            "changes learn leaves to read-time resolution, retired at write time. A perfect "
            "judge would leave 116 of W's 252 updates stale instead of 239 (docs/tuning.md, "
            "twenty-third round). None: off."
        ),
    )
    judge_decision_band: tuple[float, float] | None = Field(
        default=(0.2, 0.8),
        description=(
            "With a judge only: deliberating responses whose decision-classifier probability "
            "(layer 1) lies in [low, high] are asked about once, at the agent's next run "
            "(brain/review.py): a recorded one the judge finds no decision in is rejected, a "
            "rejected one it finds a decision in goes through layers 3 and 2. On the gate "
            "sets 0.2-0.8 holds a third to a half of the responses; a perfect judge of it "
            "would leave noise 0.113 and missed 0.060 on the sealed blind sets (0.269 and "
            "0.240 without; docs/tuning.md, twenty-third round). Up to judge_max_items per "
            "run, oldest first. None: off."
        ),
    )
    judge_checks: bool = Field(
        default=True,
        description=(
            "With a judge: each batch of questions opens with a few whose answer is not in "
            "doubt (consolidation/checks.py for the facts: a changed rent, two lifts, a "
            "restated note, two people bringing dessert; brain.review.GATE_CHECKS for the "
            "decision band: two decisions, a status report, a choice left open). A judge "
            "that answers one wrongly or not at all has none of the batch's answers applied "
            "(they are asked again next run). The answers' rails cannot tell a judge that "
            "says 'supersede' or 'a decision' to everything: Gemma 3 270M took the authored "
            "gate set's CV noise from 0 to 0.188 (docs/tuning.md, twenty-fifth round)."
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
        description=(
            "A consolidation judge call that has not answered by then is abandoned; a judge "
            "asked through complete_json (ChatJudge) keeps the answers it gave by then, the "
            "rest are asked at the next run."
        ),
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

    @field_validator("judge_decision_band")
    @classmethod
    def _band(cls, value: tuple[float, float] | None) -> tuple[float, float] | None:
        if value is not None and not 0.0 <= value[0] <= value[1] <= 1.0:
            raise ValueError("judge_decision_band needs 0 <= low <= high <= 1")
        return value
