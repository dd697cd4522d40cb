"""Fact extraction: the durable queue of turns and the worker that drains it."""

from __future__ import annotations

from pydantic import Field

from memory_kernel.config._base import Frozen

__all__ = ["ExtractionConfig"]


class ExtractionConfig(Frozen):
    """What happens to the turns once an extractor is configured (``MemoryKernel.open(...,
    extractor=...)``): queued by ``post_turn``, drained off the hot path."""

    enabled: bool = Field(
        default=True,
        description=(
            "Queue each exchange's turns for the configured fact extractor (post_turn: one "
            "INSERT in its unit of work). Off, or without an extractor, nothing is queued and "
            "nothing is extracted; turns already queued stay until a drain runs."
        ),
    )
    worker: bool = Field(
        default=True,
        description=(
            "Run the kernel's background extraction worker (the queue is a table, so a "
            "restart loses nothing). Off: consolidate and kernel.extract_pending drain it."
        ),
    )
    worker_poll_s: float = Field(
        default=2.0,
        gt=0,
        description=(
            "Seconds between the worker's polls of the queue when it found nothing to do "
            "(a round that drained something polls again at once)."
        ),
    )
    batch_size: int = Field(
        default=32,
        ge=1,
        le=1000,
        description=(
            "Turns of one agent handed to the extractor per call, oldest first (a chat "
            "extractor reads them in one request; earlier turns give later ones context)."
        ),
    )
    max_attempts: int = Field(
        default=5,
        ge=1,
        le=1000,
        description=(
            "A turn whose extraction failed this many times is parked: kept, counted and "
            "shown by inspect, never retried by itself (a poison turn cannot block its "
            "agent's queue)."
        ),
    )
    backoff_first_s: float = Field(
        default=30.0,
        ge=0,
        description=(
            "Wait before a failed turn is tried again; doubles with each further failure "
            "(an endpoint that is down is not hammered)."
        ),
    )
    backoff_max_s: float = Field(
        default=3600.0,
        ge=0,
        description="Ceiling of the retry wait.",
    )
    lease_s: float = Field(
        default=300.0,
        gt=0,
        description=(
            "A drain holds the turns it claimed this long: extraction runs outside any "
            "transaction, so a process killed meanwhile leaves them to be claimed again "
            "after the lease. Longer than an extractor call with its retries can take."
        ),
    )
