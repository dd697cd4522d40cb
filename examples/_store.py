"""How the examples open a store — a helper of the examples, not part of memory-kernel.

- ``MEMORY_KERNEL_DSN`` set: that server, in the schema ``MEMORY_KERNEL_SCHEMA`` if set, else
  in a fresh ``example_<random>`` schema, so an example never touches your real memories
  (the name is printed at the end: drop it when you are done looking);
- otherwise: an embedded PostgreSQL + pgvector in a temporary directory, removed on exit.

Either way every run starts from an empty store, so running an example twice works.
"""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from memory_kernel import MemoryKernel, MemoryKernelConfig


@asynccontextmanager
async def open_store(
    sections: Mapping[str, Mapping[str, Any]] | None = None, **options: Any
) -> AsyncIterator[MemoryKernel]:
    """``MemoryKernel.open`` on a throwaway store; ``sections`` are extra config sections
    (``{"context": {...}}``), ``options`` go to ``MemoryKernel.open`` (clock, judge...)."""
    data: dict[str, Any] = {name: dict(values) for name, values in (sections or {}).items()}
    dsn = os.environ.get("MEMORY_KERNEL_DSN")
    if dsn:
        given = os.environ.get("MEMORY_KERNEL_SCHEMA")
        schema = given or f"example_{uuid.uuid4().hex[:8]}"
        data.setdefault("storage", {})["schema_name"] = schema
        config = MemoryKernelConfig.from_mapping(data)
        async with MemoryKernel.open(dsn, config=config, **options) as kernel:
            yield kernel
        if not given:
            print(f"(left schema {schema} in your database: DROP SCHEMA {schema} CASCADE)")
        return
    with tempfile.TemporaryDirectory(prefix="mk-example-") as tmp:
        config = MemoryKernelConfig.from_mapping(data)
        async with MemoryKernel.open(data_dir=Path(tmp) / "pg", config=config, **options) as k:
            yield k
