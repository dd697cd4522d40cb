"""Public pydantic models and enums."""

from memory_kernel.models.enums import (
    AdmissionStatus,
    DecidedBy,
    EpisodeStatus,
    EventKind,
    FactStatus,
    MemoryKind,
    Stakes,
)

__all__ = [
    "AdmissionStatus",
    "DecidedBy",
    "EpisodeStatus",
    "EventKind",
    "FactStatus",
    "MemoryKind",
    "Stakes",
]
