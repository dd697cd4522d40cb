"""Storage: the database, the pool, HNSW and the embedded server."""

from __future__ import annotations

import re

from pydantic import Field, field_validator

from memory_kernel.config._base import Frozen

__all__ = ["StorageConfig"]

_IDENTIFIER = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


class StorageConfig(Frozen):
    """Where and how memories are stored."""

    schema_name: str = Field(
        default="memory_kernel",
        description=(
            "Postgres schema of memory-kernel's tables; every connection sets its search_path"
            " to it, so the host application's tables are never touched."
        ),
    )
    pool_size: int = Field(
        default=10,
        ge=1,
        le=1000,
        description=(
            "Connections kept open in the pool: enough for a host running a few concurrent "
            "agent turns."
        ),
    )
    max_overflow: int = Field(
        default=10,
        ge=0,
        le=1000,
        description=(
            "Extra connections opened under a burst beyond pool_size and closed afterwards."
        ),
    )
    connect_timeout_s: float = Field(
        default=10.0,
        gt=0,
        description="Seconds to wait for a new connection before ConnectionFailedError.",
    )
    dedicated_partition_rows: int = Field(
        default=2000,
        ge=100,
        description=(
            "An agent with more rows than this gets its own partition with an HNSW index (at "
            "consolidation); below it an exact scan of its rows in the shared partition is "
            "cheaper than an ANN index and always complete."
        ),
    )
    hnsw_ef_search: int = Field(
        default=64,
        ge=10,
        le=1000,
        description=(
            "Candidate list size of the HNSW scan (per connection): recall@10 0.992 at 10k "
            "rows per agent (1M rows, 100 agents, benchmarks/search.py; 40 gave 0.975, 100 "
            "gave 0.997 at 1.5x the p50 and nearly twice the p99)."
        ),
    )
    hnsw_m: int = Field(
        default=16,
        ge=4,
        le=100,
        description=(
            "HNSW graph degree of dedicated partitions: pgvector's default, a good "
            "recall/size balance for 384-1536 dimensions."
        ),
    )
    hnsw_ef_construction: int = Field(
        default=64,
        ge=16,
        le=1000,
        description=(
            "HNSW build-time candidate list: pgvector's default; higher builds slower for "
            "little recall at these sizes."
        ),
    )
    embed_timeout_s: float = Field(
        default=10.0,
        gt=0,
        description=(
            "An embedder call that has not answered by then raises EmbedderError (the write "
            "is not blocked forever by a slow model server)."
        ),
    )
    index_worker: bool = Field(
        default=True,
        description=(
            "Run the background task that moves newly written facts and episodes of promoted "
            "agents into their HNSW index (storage/indexer.py). Off: they stay staged and "
            "are searched exactly until consolidation indexes them."
        ),
    )
    index_batch: int = Field(
        default=16,
        ge=1,
        le=10_000,
        description=(
            "Rows indexed per transaction by the index worker: each costs an HNSW insert "
            "(5-10 ms), and a learn touching one of them waits for at most one batch."
        ),
    )
    index_idle_s: float = Field(
        default=0.25,
        ge=0,
        description=(
            "The index worker waits until this process has written nothing for this long "
            "before indexing what it wrote: the HNSW inserts then run between turns, not "
            "during them (at the latest after index_poll_s)."
        ),
    )
    index_poll_s: float = Field(
        default=30.0,
        gt=0,
        description=(
            "Seconds between the index worker's sweeps of every promoted agent (rows staged "
            "by other processes); the agents this process writes are indexed at once."
        ),
    )
    embedded_shared_buffers_mb: int | None = Field(
        default=None,
        ge=16,
        le=1_048_576,
        description=(
            "shared_buffers of the embedded server (ignored with a DSN: tune your own server)."
            " None = a quarter of the machine's (or container's) memory, between 128 MB and "
            "2048 MB: at 1M rows over 100 agents the HNSW indexes searched are ~2 GB; with "
            "Postgres's stock 128 MB a search read 415 of its 571 pages from the OS (server "
            "time p50 10.4 ms), with 2 GB none (1.0 ms; benchmarks/search.py --diagnose). "
            "Applied when the server starts; a server another process runs keeps its value "
            "until it restarts."
        ),
    )

    @field_validator("schema_name")
    @classmethod
    def _valid_schema(cls, value: str) -> str:
        # The schema name ends up in DDL and search_path, so only plain identifiers pass.
        if not _IDENTIFIER.match(value):
            raise ValueError("schema_name must be a lowercase SQL identifier (a-z, 0-9, _)")
        return value
