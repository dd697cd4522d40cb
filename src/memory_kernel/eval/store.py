"""A throwaway store for evaluation runs: never the user's data.

``MEMORY_KERNEL_EVAL_DSN`` points runs at a server you choose; otherwise an embedded server
starts in a temporary directory and is removed afterwards. Every ``eval_kernel`` gets a fresh
schema that is dropped when it closes, so one server can serve many kernels: a threshold
sweep opens one kernel per value inside ``eval_server()`` and pays the server start once.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import text

from memory_kernel.config import MemoryKernelConfig
from memory_kernel.eval.progress import progress
from memory_kernel.judges.base import Judge
from memory_kernel.kernel import MemoryKernel
from memory_kernel.protocols import Clock, Embedder, FactExtractor
from memory_kernel.storage.embedded import EmbeddedServer

__all__ = ["eval_kernel", "eval_server"]


@dataclass
class _Shared:
    """The server of one ``eval_server()`` block, started on first use."""

    dsn: str | None = None
    server: EmbeddedServer | None = None
    tmp: Path | None = None

    async def ensure(self) -> str:
        if self.dsn is None:
            self.tmp = Path(tempfile.mkdtemp(prefix="mk-eval-"))
            with progress("starting a throwaway PostgreSQL", None):
                self.server = await EmbeddedServer.start(self.tmp / "pg")
            self.dsn = self.server.dsn
        return self.dsn

    async def close(self) -> None:
        try:
            if self.server is not None:
                await self.server.stop()
        finally:
            if self.tmp is not None:
                shutil.rmtree(self.tmp, ignore_errors=True)


EVAL_EMBED_TIMEOUT_S = 600.0

_SHARED: ContextVar[_Shared | None] = ContextVar("memory_kernel_eval_server", default=None)


@asynccontextmanager
async def eval_server() -> AsyncIterator[_Shared]:
    """Within this block every ``eval_kernel`` uses one server, started lazily (a suite
    that never opens a kernel starts none) and stopped at the end."""
    current = _SHARED.get()
    if current is not None:
        yield current
        return
    shared = _Shared()
    token = _SHARED.set(shared)
    try:
        yield shared
    finally:
        _SHARED.reset(token)
        await shared.close()


def _for_eval(
    config: MemoryKernelConfig | dict[str, object] | None, schema: str
) -> MemoryKernelConfig:
    """``config`` on ``schema``, with an embedding timeout of at least ``EVAL_EMBED_TIMEOUT_S``:
    an evaluation measures quality, and a slow embedder (a CPU model on a busy machine) must
    not turn into facts stored without a vector, which would silently change the decisions."""
    if not isinstance(config, MemoryKernelConfig):
        config = MemoryKernelConfig.from_mapping(dict(config or {}))
    timeout = max(config.storage.embed_timeout_s, EVAL_EMBED_TIMEOUT_S)
    storage = config.storage.model_copy(update={"schema_name": schema, "embed_timeout_s": timeout})
    return config.model_copy(update={"storage": storage})


@asynccontextmanager
async def eval_kernel(
    embedder: Embedder,
    *,
    clock: Clock | None = None,
    config: MemoryKernelConfig | dict[str, object] | None = None,
    extractor: FactExtractor | None = None,
    judge: Judge | None = None,
) -> AsyncIterator[MemoryKernel]:
    """A kernel on a fresh schema of the evaluation server (``config`` as a model or a
    mapping; its schema name is replaced)."""
    schema = f"eval_{uuid.uuid4().hex[:12]}"
    cfg = _for_eval(config, schema)
    async with eval_server() as shared:
        dsn = os.environ.get("MEMORY_KERNEL_EVAL_DSN") or await shared.ensure()
        async with MemoryKernel.open(
            dsn, embedder=embedder, config=cfg, clock=clock, extractor=extractor, judge=judge
        ) as kernel:
            try:
                yield kernel
            finally:
                # A passive prefetch of the last turn may still be reading: stop it before its
                # tables go, or it logs "relation does not exist" errors.
                await kernel.context.close()
                async with kernel.database.transaction() as conn:
                    await conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
