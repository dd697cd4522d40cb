"""One frozen configuration tree, one module per section (re-exported here).

Every threshold lives here with its default and the reason for it, in the field's
``description``: ``memory-kernel config --markdown`` renders them as docs/configuration.md
(a test keeps the two equal). Thresholds belong to one embedder: the defaults are for the
default ``HybridEmbedder`` (its "same thing" cosines set for it, the others measured with
the ``HashingEmbedder`` and checked with the hybrid by ``memory-kernel eval``; see
docs/tuning.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Self

from pydantic import ValidationError

from memory_kernel.config._base import Frozen
from memory_kernel.config.brain import BrainConfig
from memory_kernel.config.consolidation import ConsolidationConfig
from memory_kernel.config.context import ContextConfig
from memory_kernel.config.extraction import ExtractionConfig
from memory_kernel.config.heart import HeartConfig
from memory_kernel.config.storage import StorageConfig
from memory_kernel.errors import ConfigError

__all__ = [
    "BrainConfig",
    "ConsolidationConfig",
    "ContextConfig",
    "ExtractionConfig",
    "HeartConfig",
    "MemoryKernelConfig",
    "StorageConfig",
]


class MemoryKernelConfig(Frozen):
    """The whole configuration; build it in code or load it with :meth:`from_file`."""

    storage: StorageConfig = StorageConfig()
    heart: HeartConfig = HeartConfig()
    brain: BrainConfig = BrainConfig()
    context: ContextConfig = ContextConfig()
    consolidation: ConsolidationConfig = ConsolidationConfig()
    extraction: ExtractionConfig = ExtractionConfig()

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
