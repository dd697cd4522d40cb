"""What ``run_demo`` returns: every number the demo prints, computed from the run."""

from __future__ import annotations

import uuid
from enum import StrEnum

from pydantic import Field

from memory_kernel.models.base import OutputModel
from memory_kernel.models.enums import FactStatus
from memory_kernel.models.turns import SkipReason

__all__ = [
    "DemoResult",
    "DuplicateDecisionsOutcome",
    "EpisodeOutcome",
    "GreetingOutcome",
    "NoiseOutcome",
    "Rejection",
    "SeedProblem",
    "SeedRow",
    "StaleFactOutcome",
    "Totals",
    "TurnTrace",
    "UpdateOutcome",
]


class SeedProblem(StrEnum):
    """The problems of the design notes the scripted session runs into."""

    STALE_FACT = "stale_fact"
    DUPLICATE_EPISODE = "duplicate_episode"
    NOISE_DECISIONS = "noise_decisions"
    DUPLICATE_DECISIONS = "duplicate_decisions"
    GREETING = "greeting"
    #: Issue 22, not a seed: a value changed late in a long message must win over the old.
    LONG_MESSAGE_UPDATE = "long_message_update"


class TurnTrace(OutputModel):
    """One turn, as the naive memory and memory-kernel each handled it."""

    key: str
    session_id: str
    message: str
    reply: str
    frame: str
    mode: str
    naive_injected: tuple[str, ...]
    naive_tokens: int
    naive_stored: tuple[str, ...]  # the kinds it appended this turn ("episode", "decision")
    kernel_injected: tuple[str, ...]  # the memory lines of the turn's context text
    kernel_tokens: int
    nodes_fetched: tuple[str, ...]
    nodes_skipped: tuple[str, ...]
    memory_fetches: int  # recall nodes (facts, episodes, decisions) actually queried
    decisions_deduplicated: int
    episode_id: uuid.UUID
    episode_reused: bool
    decision: str | None = None  # what memory-kernel recorded, if anything
    skipped: SkipReason | None = None
    layer: int | None = None
    reason: str | None = None


class Rejection(OutputModel):
    message: str
    reply: str
    layer: int | None
    skipped: SkipReason | None
    reason: str | None


class StaleFactOutcome(OutputModel):
    stale: str
    current: str
    stale_status: FactStatus
    current_status: FactStatus
    superseded_by_current: bool
    history: tuple[str, ...]  # the chain, oldest first
    naive_active_versions: int
    naive_injected_stale: bool
    kernel_injected_stale: bool
    kernel_injected_current: bool


class EpisodeOutcome(OutputModel):
    message: str
    naive_episodes: int
    kernel_episodes: int
    reused: bool


class NoiseOutcome(OutputModel):
    rejections: tuple[Rejection, ...]
    naive_noise_stored: int
    kernel_noise_stored: int


class DuplicateDecisionsOutcome(OutputModel):
    at_start: Rejection  # the same question again in the session: layer 2
    naive_stored: int  # near-identical decisions the naive memory kept
    kernel_stored: int  # near-identical decisions kept (other sessions: layer 2 is per session)
    probe: str  # the later question that recalls them
    naive_injected: int
    kernel_injected: int
    kernel_deduplicated: int


class UpdateOutcome(OutputModel):
    """A value said once and changed later, late in a long message (``script.SYNC_*``),
    asked about in a new session: is the new value in the prompt, and is the old one there
    without its date (so that it reads as current: ``eval.answers``' rule)?"""

    stale: str
    current: str
    message_chars: int  # the long message that changed it
    update_at: int  # where in it the new value is said
    probe: str
    naive_injected_current: bool
    naive_stale_as_current: bool
    kernel_injected_current: bool
    kernel_stale_as_current: bool
    kernel_lines: tuple[str, ...]  # the kernel's lines that say either value


class GreetingOutcome(OutputModel):
    message: str
    nodes_skipped: tuple[str, ...]
    kernel_memory_fetches: int
    naive_memory_fetches: int
    naive_tokens: int
    kernel_tokens: int


class SeedRow(OutputModel):
    """One line of the side-by-side summary."""

    problem: SeedProblem
    title: str
    naive: str
    kernel: str
    handled: bool


class Totals(OutputModel):
    naive_stored: int
    kernel_current: int  # current facts + episodes + active decisions
    naive_tokens: int
    kernel_tokens: int
    turns: int
    naive_turns_with_memory_io: int  # turns that searched the store
    kernel_turns_with_memory_io: int

    @property
    def tokens_saved(self) -> int:
        return self.naive_tokens - self.kernel_tokens

    @property
    def tokens_saved_pct(self) -> float:
        return 100.0 * self.tokens_saved / self.naive_tokens if self.naive_tokens else 0.0


class DemoResult(OutputModel):
    agent_id: str
    store: str  # where the data lived
    store_removed: bool
    embedder: str
    naive_top_k: int
    token_budget: int  # memory-kernel's context budget per turn (runner.DEMO_TOKEN_BUDGET)
    turns: tuple[TurnTrace, ...]
    stale_fact: StaleFactOutcome
    duplicate_episode: EpisodeOutcome
    noise: NoiseOutcome
    duplicate_decisions: DuplicateDecisionsOutcome
    greeting: GreetingOutcome
    long_message_update: UpdateOutcome
    seeds: tuple[SeedRow, ...]
    totals: Totals
    consolidation: dict[str, int] = Field(default_factory=dict)
    open_s: float = 0.0  # opening the store (starting the embedded server, migrating)
    duration_s: float = 0.0

    @property
    def all_handled(self) -> bool:
        return all(row.handled for row in self.seeds)
