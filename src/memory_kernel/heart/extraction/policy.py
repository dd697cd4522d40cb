"""The rules of fact extraction, pure: which queued turns a drain takes, how long a failed
one waits, when one is parked, and the facts an extractor's answer becomes.

An agent's queue is read in the order its turns were said. A drain takes the leading turns
that are due, and stops at the first one that is not (held by another drain, or waiting
after a failure): facts are learned in the order they were said, so an older value is never
learned after a newer one and made current again. A batch that failed is retried in halves
(``batch_size >> attempts``) until the turn that breaks the extractor is alone; after
``max_attempts`` failures a turn is parked — kept and counted, it no longer holds up its
agent's newer turns.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from memory_kernel.config.extraction import ExtractionConfig
from memory_kernel.models.extraction import ExtractedFact, ExtractionTurn
from memory_kernel.models.facts import FactInput

__all__ = [
    "SOURCE",
    "Queued",
    "claim_size",
    "error_text",
    "fact_inputs",
    "lease_until",
    "parks",
    "retry_at",
    "take",
]

#: ``metadata["source"]`` of every extracted fact.
SOURCE = "extraction"
# Longest error text kept on a queue row (the log has the rest).
_ERROR_CHARS = 1000


@dataclass(frozen=True, slots=True)
class Queued:
    """A queued turn as the claim reads it: the queue row's bookkeeping and the stored turn
    (``None`` when the turn no longer exists: nothing to extract, the row just goes)."""

    turn_id: uuid.UUID
    due_at: datetime
    attempts: int
    turn: ExtractionTurn | None


def claim_size(batch_size: int, head_attempts: int) -> int:
    """How many turns a drain takes when the oldest has failed ``head_attempts`` times:
    the batch halves with each failure, so a turn that breaks the extractor ends up alone."""
    return max(1, batch_size >> min(head_attempts, 30))


def take(rows: Sequence[Queued], *, now: datetime, batch_size: int) -> list[Queued]:
    """The leading due rows of an agent's queue (oldest first), at most :func:`claim_size`;
    none when the oldest is not due."""
    if not rows or rows[0].due_at > now:
        return []
    limit = claim_size(batch_size, rows[0].attempts)
    taken: list[Queued] = []
    for row in rows[:limit]:
        if row.due_at > now:
            break
        taken.append(row)
    return taken


def retry_at(now: datetime, attempts: int, cfg: ExtractionConfig) -> datetime:
    """When a turn that failed its ``attempts``-th time may be tried again (exponential)."""
    seconds = min(cfg.backoff_max_s, cfg.backoff_first_s * 2 ** min(attempts - 1, 40))
    return now + timedelta(seconds=max(0.0, seconds))


def lease_until(now: datetime, cfg: ExtractionConfig) -> datetime:
    """Until when a drain holds the turns it claimed (then another may claim them)."""
    return now + timedelta(seconds=cfg.lease_s)


def parks(attempts: int, cfg: ExtractionConfig) -> bool:
    """A turn that failed ``attempts`` times is parked (kept, never retried by itself)."""
    return attempts >= cfg.max_attempts


def error_text(exc: BaseException) -> str:
    """What a queue row keeps of a failure."""
    return f"{type(exc).__name__}: {exc}"[:_ERROR_CHARS]


def fact_inputs(
    turn: ExtractionTurn,
    found: Sequence[ExtractedFact],
    *,
    extractor: str,
    episode_exists: bool,
) -> list[FactInput]:
    """The facts to learn from one turn's extracted facts, with their provenance: the turn's
    episode (``derived_from``, when it still exists) and ``metadata`` naming the source, the
    turn, its session and the extractor. Through admission like any learned fact."""
    derived = (turn.episode_id,) if turn.episode_id is not None and episode_exists else ()
    metadata: dict[str, Any] = {
        "source": SOURCE,
        "turn_id": str(turn.turn_id),
        "session_id": turn.session_id,
        "role": turn.role,
        "said_at": turn.said_at.isoformat(),
        "extractor": extractor,
    }
    seen: set[tuple[str, str | None]] = set()
    inputs = []
    for fact in found:
        key = (fact.content, fact.subject)
        if key in seen:  # an extractor that says the same thing twice learns it once
            continue
        seen.add(key)
        inputs.append(
            FactInput(
                agent_id=turn.agent_id,
                content=fact.content,
                subject=fact.subject or None,
                category=fact.category,
                confidence=fact.confidence,
                derived_from=derived,
                metadata=metadata,
            )
        )
    return inputs
