"""ContextEngine: recall, budgets, prefetch."""

from __future__ import annotations

from pydantic import Field

from memory_kernel.config._base import Frozen

__all__ = ["ContextConfig"]


class ContextConfig(Frozen):
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
        description=(
            'Memories a node offers at least (the seed\'s "top 3-5"; turns only if they are '
            "about the query, fill_similarity_ratio); facts and turns offer more, about the "
            "query, when the token budget has room for them."
        ),
    )
    extracted_facts_shown: bool = Field(
        default=False,
        description=(
            "Whether the recall nodes show facts extracted from a conversation (at most "
            "passive_limit of them). Off: the turns and episodes they were taken from say "
            "them, dated, and what the user wants is shown by user_traits. Rule extractor, "
            "300 tokens, answer in context / stale shown (authored, s16, sealed F, LoCoMo): "
            "shown 0.826/0.20, 0.877/0.09, 0.864/0.16, 0.327; off 0.841/0.16, 0.860/0.09, "
            "0.864/0.11, 0.350; 1,000 tokens alike."
        ),
    )
    traits_limit: int = Field(
        default=3,
        ge=0,
        le=100,
        description=(
            "user_traits: how many of the user's current preferences (facts of category "
            "'preference') a turn that includes the node shows, the best for the query, "
            "before any recalled memory, within traits_budget_share; 0 shows none."
        ),
    )
    traits_budget_share: float = Field(
        default=0.1,
        gt=0.0,
        le=1.0,
        description=(
            "The share of the turn's token budget user_traits' lines take at most (the first "
            "always). Rule extractor, 300 tokens, answer in context (authored / s16 / F): "
            "always three lines 0.818 / 0.860 / 0.864, five 0.818 / 0.860 / 0.848, one "
            "0.826 / 0.877 / 0.864; 0.1 (one line at 300 tokens, three at 1,000) is one's, "
            "and at 1,000 tokens level with none."
        ),
    )
    passive_max_items: int = Field(
        default=40,
        ge=1,
        le=1000,
        description=(
            "Memories a recall node offers at most when the turn's token budget has room: "
            "the budget keeps the best that fit, across all nodes, so a context is filled "
            "by relevance instead of stopping at passive_limit per node. passive_limit is "
            "then the least a node offers."
        ),
    )
    fill_similarity_ratio: float = Field(
        default=0.1,
        ge=0.0,
        le=1.0,
        description=(
            "Beyond passive_limit (for turns: from the first), a recall node offers only "
            "memories at least this share as similar to the query as its best one: the "
            "budget is filled with what is about the query, and a small store's unrelated "
            "memories stay out (0: fill with anything). Dev conversations and LoCoMo conv-26,"
            " turns shown as 400-character excerpts: 0.1 answered 0.962/0.347 at 880/983 "
            "tokens, 0.2 0.955/0.347 at 745/980; 0.5 loses a tenth of the answers."
        ),
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
    turn_confidence: float = Field(
        default=0.6,
        ge=0.0,
        le=1.0,
        description=(
            "Turns (what was said, verbatim) carry no confidence; a recalled turn counts like "
            "a fact of this confidence: a little under a learned fact's default (0.7), so at "
            "equal relevance the distilled memory wins."
        ),
    )
    turn_excerpt_chars: int = Field(
        default=400,
        ge=40,
        le=1_000_000,
        description=(
            "A recalled turn longer than this is shown as its run of sentences about the "
            "query (context/excerpt.py), so one long reply does not spend the budget of many "
            "memories; search_memory returns turns whole. Dev conversations (fill 0.2): 240 "
            "answered 0.909, 300 0.939, 400 0.955, whole turns 0.932; LoCoMo conv-26 turns "
            "are short (evidence 0.638-0.658 at any of them)."
        ),
    )
    episode_budget_share: float = Field(
        default=0.1,
        gt=0.0,
        le=1.0,
        description=(
            "A recalled episode whose line would take more than this share of the turn's "
            "token budget (at about four characters a token) is shown as its run of "
            "sentences about the query (context/episodes.py): whole, one session's gist "
            "took 42-46% of a 300-token context. At 300 tokens (answer in context / stale "
            "shown as current, whole -> 0.1): authored dev 0.750 / 0.28 -> 0.750 / 0.24, "
            "LoCoMo dev 0.295 -> 0.333 (evidence 0.477 -> 0.542); 0.075-0.125 alike, 0.2 "
            "lost the gain. At 1,000 tokens within 0.001."
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
