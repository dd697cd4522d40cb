"""The exceptions memory-kernel raises.

Every error the library lets escape is a ``MemoryKernelError``; driver and SQL errors are
mapped once, at the storage edge, and chained with ``raise ... from exc``::

    MemoryKernelError
    ├── ConfigError                  broken or inconsistent configuration; a clock giving
    │                                naive or out-of-range times
    ├── ValidationError              bad input: empty/huge text, NUL bytes, bad numbers
    │   └── InvalidVectorError       NaN/inf or wrong-dimension vectors
    ├── NotFoundError                an id that does not exist for this agent
    ├── EmbedderError                the embedder failed (raised, timed out, answered garbage)
    │   └── EmbedderMismatchError    the store was built with another embedder name/dimension
    ├── JudgeError                   the judge failed (callers fall back to rules)
    └── StorageError                 the database failed
        ├── ConnectionFailedError    cannot reach or start the server (wrong DSN, server down)
        ├── ExtensionMissingError    pgvector is not installed / cannot be created
        ├── MigrationError           the schema cannot be brought to head
        └── ConflictError            a concurrent change won; safe to retry
"""

from __future__ import annotations

__all__ = [
    "ConfigError",
    "ConflictError",
    "ConnectionFailedError",
    "EmbedderError",
    "EmbedderMismatchError",
    "ExtensionMissingError",
    "ExtractorError",
    "InvalidVectorError",
    "JudgeError",
    "MemoryKernelError",
    "MigrationError",
    "NotFoundError",
    "StorageError",
    "SummariserError",
    "ValidationError",
]


class MemoryKernelError(Exception):
    """Base class of every exception memory-kernel raises."""


class ConfigError(MemoryKernelError):
    """The configuration is broken: unknown keys, impossible values, dependency cycles, or a
    clock that returns naive or out-of-range datetimes."""


class ValidationError(MemoryKernelError, ValueError):
    """An input was rejected before anything was written."""


class InvalidVectorError(ValidationError):
    """A vector contains NaN/inf or has the wrong dimension."""


class NotFoundError(MemoryKernelError, LookupError):
    """The id does not exist (for this agent)."""


class EmbedderError(MemoryKernelError):
    """The embedder failed: it raised, timed out or returned an unusable answer."""


class ExtractorError(MemoryKernelError):
    """The fact extractor failed: it raised, timed out or returned an unusable answer. The
    turns stay queued and are tried again."""


class SummariserError(MemoryKernelError):
    """The episode summariser failed: it raised, timed out or returned an unusable answer.
    The episode ends with its extractive summary instead."""


class EmbedderMismatchError(EmbedderError):
    """The store was built with another embedder; mixing vectors would corrupt search."""

    def __init__(self, *, stored_name: str, stored_dim: int, given_name: str, given_dim: int):
        self.stored_name = stored_name
        self.stored_dim = stored_dim
        self.given_name = given_name
        self.given_dim = given_dim
        super().__init__(
            f"this store was built with embedder {stored_name!r} (dim {stored_dim}) but "
            f"{given_name!r} (dim {given_dim}) was given; open it with the same embedder "
            "(a store built before the default became hybrid-v1-512: "
            "embedder=HashingEmbedder()) or follow the embedder-change procedure in "
            "docs/reliability.md"
        )


class JudgeError(MemoryKernelError):
    """The judge failed; callers fall back to the rule decision and record that they did."""


class StorageError(MemoryKernelError):
    """The database failed."""


class ConnectionFailedError(StorageError, ConnectionError):
    """The database server cannot be reached or started."""


class ExtensionMissingError(StorageError):
    """The pgvector extension is not available and cannot be created."""


class MigrationError(StorageError):
    """The schema cannot be migrated to head."""


class ConflictError(StorageError):
    """A concurrent transaction changed the same rows; the operation may be retried."""
