"""A throwaway store for evaluation runs: never the user's data.

``MEMORY_KERNEL_EVAL_DSN`` points runs at a server you choose (a fresh schema is used and
dropped); otherwise an embedded server starts in a temporary directory and is removed.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from sqlalchemy import text

from memory_kernel.config import MemoryKernelConfig
from memory_kernel.kernel import MemoryKernel
from memory_kernel.protocols import Clock, Embedder

__all__ = ["eval_kernel"]


@asynccontextmanager
async def eval_kernel(
    embedder: Embedder, *, clock: Clock | None = None, config: dict[str, object] | None = None
) -> AsyncIterator[MemoryKernel]:
    dsn = os.environ.get("MEMORY_KERNEL_EVAL_DSN")
    schema = f"eval_{uuid.uuid4().hex[:12]}"
    data: dict[str, object] = dict(config or {})
    storage = dict(data.get("storage", {}) or {})  # type: ignore[call-overload]
    storage["schema_name"] = schema
    data["storage"] = storage
    cfg = MemoryKernelConfig.from_mapping(data)
    tmp = None if dsn else Path(tempfile.mkdtemp(prefix="mk-eval-"))
    try:
        async with MemoryKernel.open(
            dsn, embedder=embedder, config=cfg, clock=clock, data_dir=tmp and tmp / "pg"
        ) as kernel:
            try:
                yield kernel
            finally:
                if dsn:
                    async with kernel.database.transaction() as conn:
                        await conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
