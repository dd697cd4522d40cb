"""One frozen configuration tree.

Every threshold lives here with its default and the reason for it; docs/configuration.md is
the reference. Thresholds belong to one embedder: they were measured with the default
``HashingEmbedder`` on the development data (``memory-kernel eval``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from memory_kernel.errors import ConfigError

__all__ = [
    "BrainConfig",
    "ConsolidationConfig",
    "ContextConfig",
    "HeartConfig",
    "MemoryKernelConfig",
    "StorageConfig",
]

_IDENTIFIER = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class StorageConfig(_Frozen):
    """Where and how memories are stored."""

    schema_name: str = Field(default="memory_kernel", description="Postgres schema of our tables.")
    pool_size: int = Field(default=10, ge=1, le=1000)
    max_overflow: int = Field(default=10, ge=0, le=1000)
    connect_timeout_s: float = Field(default=10.0, gt=0)
    # An agent whose rows exceed this gets its own partition with an HNSW index; below it an
    # exact scan of its rows is cheaper than an ANN index and always complete.
    dedicated_partition_rows: int = Field(default=2000, ge=100)
    # Candidate list size of the HNSW scan: recall >= 0.98 at 10k rows/agent (benchmarks/search.py).
    hnsw_ef_search: int = Field(default=100, ge=10, le=1000)
    hnsw_m: int = Field(default=16, ge=4, le=100)
    hnsw_ef_construction: int = Field(default=64, ge=16, le=1000)
    embed_timeout_s: float = Field(default=10.0, gt=0)

    @field_validator("schema_name")
    @classmethod
    def _valid_schema(cls, value: str) -> str:
        # The schema name ends up in DDL and search_path, so only plain identifiers pass.
        if not _IDENTIFIER.match(value):
            raise ValueError("schema_name must be a lowercase SQL identifier (a-z, 0-9, _)")
        return value


class HeartConfig(_Frozen):
    """Facts and episodes."""

    max_content_bytes: int = Field(default=64 * 1024, ge=64)
    default_confidence: float = Field(default=0.7, ge=0.0, le=1.0)
    episode_dedup_window_s: float = Field(default=30 * 60, ge=0)
    episode_dedup_overlap: float = Field(default=0.7, ge=0.0, le=1.0)
    admission_similarity: float = Field(default=0.7, ge=0.0, le=1.0)


class BrainConfig(_Frozen):
    """Decisions."""

    dedup_window_s: float = Field(default=5 * 60, ge=0)
    dedup_cosine: float = Field(default=0.85, ge=0.0, le=1.0)
    min_description_chars: int = Field(default=20, ge=0)
    auto_deliberation_frames: frozenset[str] = frozenset({"decision", "debug"})


class ContextConfig(_Frozen):
    """Context assembly."""

    token_budget: int = Field(default=1500, ge=1)


class ConsolidationConfig(_Frozen):
    """Nightly maintenance."""

    decay_per_day: float = Field(default=0.01, ge=0.0)
    deprecate_below: float = Field(default=0.3, ge=0.0, le=1.0)
    merge_similarity: float = Field(default=0.85, ge=0.0, le=1.0)


class MemoryKernelConfig(_Frozen):
    """The whole configuration; build it in code or load it with :meth:`from_file`."""

    storage: StorageConfig = StorageConfig()
    heart: HeartConfig = HeartConfig()
    brain: BrainConfig = BrainConfig()
    context: ContextConfig = ContextConfig()
    consolidation: ConsolidationConfig = ConsolidationConfig()

    @classmethod
    def from_mapping(cls, data: dict[str, Any]) -> Self:
        """Validate a plain mapping; broken input raises :class:`ConfigError`."""
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(f"invalid memory-kernel configuration: {exc}") from exc

    @classmethod
    def from_file(cls, path: str | Path) -> Self:
        """Load a JSON configuration file."""
        try:
            text = Path(path).read_text(encoding="utf-8")
            return cls.model_validate_json(text)
        except OSError as exc:
            raise ConfigError(f"cannot read configuration {path}: {exc}") from exc
        except ValidationError as exc:
            raise ConfigError(f"invalid memory-kernel configuration in {path}: {exc}") from exc
