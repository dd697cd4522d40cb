"""Heart: facts (admission, dedup, supersession, contradictions) and episodes."""

from __future__ import annotations

from pydantic import Field

from memory_kernel.config._base import Frozen

__all__ = ["HeartConfig"]


class HeartConfig(Frozen):
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
    episode_idle_end_s: float = Field(
        default=30 * 60,
        gt=0,
        description=(
            "A session's episode ends after this long without a turn: the session's next "
            "turn starts a new episode, and the idle one is ended (summary, admission) by "
            "the kernel's sweeper (episode_sweep_s), consolidate, kernel.end_session or "
            "kernel.end_idle_episodes."
        ),
    )
    episode_sweep_s: float = Field(
        default=60.0,
        ge=0,
        description=(
            "How often the kernel's background sweeper ends idle episodes (those idle for "
            "episode_idle_end_s) of every agent, so they end by themselves between nightly "
            "runs; 0 turns the sweeper off."
        ),
    )
    episode_summary_chars: int = Field(
        default=300,
        ge=50,
        le=64 * 1024,
        description=(
            "Longest summary an ended episode gets from its turns (extractive: its key "
            "sentences, newer statements replacing older ones about the same thing). Dev "
            "conversations and LoCoMo conv-26: 300 kept the turns' answers, 500 cost 2-3 "
            "points (the gist competes with the turns for the budget)."
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
        default=0.88,
        ge=0.0,
        le=1.0,
        description=(
            "Embedding side of episode start dedup (catches rewordings that word overlap "
            "misses). Default embedder (hybrid-v1-512): a cosine above 0.88 is a paraphrase "
            "94% of the time on MRPC dev (HashingEmbedder: 0.85, 98%); re-tune for another "
            "embedder (docs/tuning.md)."
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
        default=0.05,
        ge=0.0,
        le=1.0,
        description=(
            "Below this cosine no relation is considered at all. Low on purpose: people "
            "restate a changed value in other words (HashingEmbedder cosine of the dev "
            "knowledge-update pairs: -0.01 to 0.52, half below 0.2); a shared word, name, "
            "identifier or typed value, the frame rules and the update scorer decide."
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
    fact_scorer_dir: str | None = Field(
        default=None,
        description=(
            "Directory with the learned fact scorers (update.json, duplicate.json, "
            "admission.json, read.json, as written by scripts/train_fact_scorers.py). A file "
            "missing there, or no directory, uses the packaged weights fitted on the "
            "development data with the embedder in use: shipped for the default embedder, the "
            "HybridEmbedder and MiniLM (the st extra); any other embedder gets the default's, "
            "with a warning "
            "to retrain for it (their cosine feature belongs to one embedder, docs/tuning.md)."
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
    episode_summariser_timeout_s: float = Field(
        default=30.0,
        gt=0,
        description=(
            "An episode summariser (MemoryKernel.open(summariser=...), e.g. ChatSummariser) "
            "that has not answered by then is abandoned: the episode ends with its "
            "extractive summary."
        ),
    )
    admission_judge_timeout_s: float = Field(
        default=20.0,
        gt=0,
        description=(
            "An LLM judge that has not answered by then is abandoned and the rules decide."
        ),
    )
