"""Brain: the decision gate's three layers."""

from __future__ import annotations

from pydantic import Field

from memory_kernel.config._base import Frozen

__all__ = ["BrainConfig"]


class BrainConfig(Frozen):
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
        default=0.88,
        ge=0.0,
        le=1.0,
        description=(
            "Cosine above which a decision duplicates one of the session's recent decisions. "
            "The default embedder (hybrid-v1-512) reaches at 0.88 the paraphrase precision "
            "the seed's 0.85 had with the HashingEmbedder (STS-B, MRPC dev; docs/tuning.md); "
            "0.85 with the HashingEmbedder."
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
    decision_classifier: str | None = Field(
        default=None,
        description=(
            "Layer 1's decision classifier: a JSON file of weights written by "
            "scripts/train_decision_gate.py; None: the packaged weights (docs/tuning.md)."
        ),
    )
    decision_threshold: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description=(
            "Layer 1 drops a response whose probability of being a decision (the classifier's) "
            "is below this. Higher: less noise recorded, more decisions missed."
        ),
    )
    auto_deliberation_frames: frozenset[str] = Field(
        default=frozenset({"decision", "debug"}),
        description=(
            "Frames in which pre_turn starts a deliberation (a draft decision) automatically "
            "and post_turn may finalise it (the seed's decision/debug frames)."
        ),
    )
