"""memory-kernel: long-term memory for AI agents that stays clean.

The public surface is what ``__all__`` lists; everything in underscore modules and in
``memory_kernel.storage`` is private.
"""

from memory_kernel.config import (
    BrainConfig,
    ConsolidationConfig,
    ContextConfig,
    HeartConfig,
    MemoryKernelConfig,
    StorageConfig,
)
from memory_kernel.embeddings import (
    HashingEmbedder,
    OpenAICompatibleEmbedder,
    SentenceTransformerEmbedder,
)
from memory_kernel.errors import (
    ConfigError,
    ConflictError,
    ConnectionFailedError,
    EmbedderError,
    EmbedderMismatchError,
    ExtensionMissingError,
    InvalidVectorError,
    JudgeError,
    MemoryKernelError,
    MigrationError,
    NotFoundError,
    StorageError,
    ValidationError,
)
from memory_kernel.kernel import MemoryKernel
from memory_kernel.models.enums import (
    AdmissionStatus,
    DecidedBy,
    EpisodeStatus,
    EventKind,
    FactStatus,
    MemoryKind,
    Stakes,
)
from memory_kernel.protocols import Clock, Embedder, SystemClock, TokenCounter

__version__ = "0.1.0"

__all__ = [
    "AdmissionStatus",
    "BrainConfig",
    "Clock",
    "ConfigError",
    "ConflictError",
    "ConnectionFailedError",
    "ConsolidationConfig",
    "ContextConfig",
    "DecidedBy",
    "Embedder",
    "EmbedderError",
    "EmbedderMismatchError",
    "EpisodeStatus",
    "EventKind",
    "ExtensionMissingError",
    "FactStatus",
    "HashingEmbedder",
    "HeartConfig",
    "InvalidVectorError",
    "JudgeError",
    "MemoryKernel",
    "MemoryKernelConfig",
    "MemoryKernelError",
    "MemoryKind",
    "MigrationError",
    "NotFoundError",
    "OpenAICompatibleEmbedder",
    "SentenceTransformerEmbedder",
    "Stakes",
    "StorageConfig",
    "StorageError",
    "SystemClock",
    "TokenCounter",
    "ValidationError",
]
