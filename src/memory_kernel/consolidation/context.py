"""What every phase of one agent's run shares: the runtime, the clock reading, the counts
and the unit-of-work helpers (each write in a small transaction under the agent's fact
lock, the one ``learn`` takes, so a learn waits for at most one batch)."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncConnection

from memory_kernel.config import ConsolidationConfig
from memory_kernel.heart.facts import store as facts_store
from memory_kernel.heart.facts.service import FactService
from memory_kernel.models.consolidation import ConsolidationAction as Action
from memory_kernel.models.consolidation import ConsolidationPhase as Phase
from memory_kernel.models.consolidation import ConsolidationProgress
from memory_kernel.runtime import Runtime

__all__ = ["ProgressCallback", "RunContext"]

ProgressCallback = Callable[[ConsolidationProgress], None]


@dataclass(slots=True)
class RunContext:
    rt: Runtime
    facts: FactService
    agent_id: str
    dry_run: bool
    progress: ProgressCallback | None
    now: datetime
    counts: Counter[Action] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    judge_calls: int = 0
    scanned: int = 0
    pairs: int = 0
    ambiguous: int = 0

    @property
    def cfg(self) -> ConsolidationConfig:
        return self.rt.config.consolidation

    def report(self, phase: Phase, done: int = 0, total: int = 0) -> None:
        if self.progress is not None:
            self.progress(
                ConsolidationProgress(agent_id=self.agent_id, phase=phase, done=done, total=total)
            )

    @asynccontextmanager
    async def locked(self) -> AsyncIterator[AsyncConnection]:
        """A transaction holding the agent's fact lock (the one ``learn`` takes)."""
        async with self.rt.db.transaction() as conn:
            await facts_store.lock_agents(conn, [self.agent_id])
            yield conn
