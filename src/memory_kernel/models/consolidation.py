"""Public models of consolidation: what ``kernel.consolidate`` reports."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from enum import StrEnum

from pydantic import Field

from memory_kernel.models.base import OutputModel

__all__ = [
    "AgentConsolidation",
    "AgentRunStatus",
    "ConsolidationAction",
    "ConsolidationPhase",
    "ConsolidationProgress",
    "ConsolidationReport",
]


class ConsolidationAction(StrEnum):
    """What consolidation did to facts, episodes and decisions (the keys of the report's
    counts)."""

    EMBEDDED = "embedded"  # a pending fact got its vector (and became active)
    REINFORCED = "reinforced"  # supporting episodes raised its confidence
    DECAYED = "decayed"  # confidence lowered for lack of recent evidence
    CONTRADICTION = "contradiction"  # a pair flagged as contradicting (confidences halved)
    MERGED = "merged"  # a duplicate retired into its cluster's winner
    SUPERSEDED = "superseded"  # retired by a newer fact (a judge's answer)
    DEPRECATED = "deprecated"  # confidence fell below the deprecation threshold
    REEMBEDDED = "reembedded"  # content changed by a merge, vector recomputed
    JUDGE_FALLBACK = "judge_fallback"  # an ambiguous case the rules decided instead
    KEPT_BOTH = "kept_both"  # an ambiguous case decided "keep both" (nothing written)
    EPISODES_ENDED = "episodes_ended"  # idle episodes ended (summary + admission)
    EXTRACTED = "extracted"  # queued turns whose facts were extracted and learned
    TURN_RESULTS_PRUNED = "turn_results_pruned"  # post_turn results past their retention
    # episodes, turns, decisions stored without a vector (an embedder outage) got theirs
    VECTORS_FILLED = "vectors_filled"
    # a judge's second reading of layer 1's uncertain band (brain.review): read, and of
    # those, recorded decisions rejected and rejected responses recorded after all
    DECISIONS_REVIEWED = "decisions_reviewed"
    DECISIONS_REJECTED = "decisions_rejected"
    DECISIONS_RESTORED = "decisions_restored"


class ConsolidationPhase(StrEnum):
    LOCK = "lock"
    EXTRACTION = "extraction"
    EPISODES = "episodes"
    PENDING = "pending"
    CONFIDENCE = "confidence"
    CANDIDATES = "candidates"
    JUDGE = "judge"
    APPLY = "apply"
    DEPRECATE = "deprecate"
    DONE = "done"


class AgentRunStatus(StrEnum):
    DONE = "done"
    SKIPPED = "skipped"  # another worker holds the agent's lock
    FAILED = "failed"  # an error stopped this agent's run (others go on)


class ConsolidationProgress(OutputModel):
    """Passed to the ``progress`` callback: where a run is. ``total`` is 0 when unknown."""

    agent_id: str
    phase: ConsolidationPhase
    done: int = 0
    total: int = 0


class AgentConsolidation(OutputModel):
    """One agent's run."""

    agent_id: str
    status: AgentRunStatus
    counts: Mapping[ConsolidationAction, int] = Field(default_factory=dict)
    judge_calls: int = 0
    facts_scanned: int = 0
    candidate_pairs: int = 0
    ambiguous: int = 0  # cases for the judge (decided by the rules when it cannot answer)
    duration_s: float = 0.0
    error: str | None = None


class ConsolidationReport(OutputModel):
    """What a ``consolidate`` / ``consolidate_all`` run changed (or, dry, would change)."""

    dry_run: bool
    started_at: datetime
    duration_s: float
    agents: tuple[AgentConsolidation, ...] = ()

    @property
    def skipped_agents(self) -> tuple[str, ...]:
        return tuple(a.agent_id for a in self.agents if a.status is AgentRunStatus.SKIPPED)

    @property
    def failed_agents(self) -> tuple[str, ...]:
        return tuple(a.agent_id for a in self.agents if a.status is AgentRunStatus.FAILED)

    @property
    def judge_calls(self) -> int:
        return sum(a.judge_calls for a in self.agents)

    @property
    def counts(self) -> dict[ConsolidationAction, int]:
        """Counts per action over all agents (actions that happened only)."""
        total: dict[ConsolidationAction, int] = {}
        for agent in self.agents:
            for action, n in agent.counts.items():
                total[action] = total.get(action, 0) + n
        return total

    def count(self, action: ConsolidationAction) -> int:
        return self.counts.get(action, 0)
