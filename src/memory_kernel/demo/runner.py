"""``run_demo``: open a store (a temporary embedded server by default), play the script,
compute the outcomes, clean up."""

from __future__ import annotations

import shutil
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

from memory_kernel.config import MemoryKernelConfig
from memory_kernel.demo import outcomes
from memory_kernel.demo.models import DemoResult
from memory_kernel.demo.naive import NAIVE_TOP_K
from memory_kernel.demo.session import play
from memory_kernel.kernel import MemoryKernel
from memory_kernel.storage.url import redact_dsn
from memory_kernel.testing import FrozenClock

__all__ = ["DEMO_SCHEMA", "DEMO_TOKEN_BUDGET", "run_demo"]

#: The demo never writes into the default ``memory_kernel`` schema of a user's store.
DEMO_SCHEMA = "memory_kernel_demo"
#: The room the demo's host gives memory in each prompt, in tokens: about what the naive
#: top-5 injects on this script's busier turns (110-225 tokens). Without a budget the kernel
#: fills the default 1,500 tokens by relevance, and in a store this small that lets in past
#: turns barely about the question; a host sizes the budget to its prompt.
DEMO_TOKEN_BUDGET = 150


async def run_demo(
    *,
    dsn: str | None = None,
    data_dir: str | Path | None = None,
    schema: str = DEMO_SCHEMA,
    agent_id: str | None = None,
) -> DemoResult:
    """Play the demo session and return every outcome it measured.

    Without ``dsn`` and ``data_dir`` an embedded PostgreSQL is started in a temporary
    directory that is removed afterwards. ``data_dir`` keeps the embedded store there;
    ``dsn`` uses that server (in ``schema``). Each run uses a fresh agent id, so runs on a
    kept store do not mix.
    """
    started = time.perf_counter()
    # A short name: the embedded server's Unix socket lives in the data directory, and
    # socket paths are limited to ~100 bytes (macOS temp dirs are long already).
    temp = None if dsn or data_dir else Path(tempfile.mkdtemp(prefix="mk-demo-"))
    where = temp / "pgdata" if temp else (Path(data_dir) if data_dir else None)
    agent = agent_id or f"demo-{uuid.uuid4().hex[:8]}"
    # A simulated clock: the session spans two days (dedup windows, recency) in seconds.
    clock = FrozenClock(datetime.now(UTC).replace(microsecond=0))
    config = MemoryKernelConfig.from_mapping(
        {"storage": {"schema_name": schema}, "context": {"token_budget": DEMO_TOKEN_BUDGET}}
    )
    try:
        async with MemoryKernel.open(dsn, config=config, data_dir=where, clock=clock) as kernel:
            open_s = time.perf_counter() - started
            store = _describe(kernel, dsn, schema, temporary=temp is not None)
            result = await _measure(kernel, agent, clock)
    finally:
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)
    return result.model_copy(
        update={
            "store": store,
            "store_removed": temp is not None and not temp.exists(),
            "open_s": open_s,
            "duration_s": time.perf_counter() - started,
        }
    )


def _describe(kernel: MemoryKernel, dsn: str | None, schema: str, *, temporary: bool) -> str:
    server = kernel.embedded_server
    if server is None:  # a DSN, given or from MEMORY_KERNEL_DSN
        where = redact_dsn(dsn) if dsn else "the server in MEMORY_KERNEL_DSN"
        return f"{where} (schema {schema})"
    if temporary:
        return f"temporary embedded PostgreSQL in {server.data_dir.parent}"
    return f"embedded PostgreSQL in {server.data_dir} (schema {schema}, kept)"


async def _measure(kernel: MemoryKernel, agent_id: str, clock: FrozenClock) -> DemoResult:
    played = await play(kernel, agent_id=agent_id, clock=clock)
    stale = await outcomes.stale_fact(kernel, played, agent_id)
    episode = outcomes.duplicate_episode(played)
    chatter = outcomes.noise(played)
    same = outcomes.duplicate_decisions(played)
    hey = outcomes.greeting(played)
    update = outcomes.long_message_update(played)
    totals = await outcomes.totals(kernel, played, agent_id)
    report = await kernel.consolidate(agent_id)
    consolidation = {
        str(action): n for agent in report.agents for action, n in agent.counts.items() if n
    }
    consolidation["facts scanned"] = sum(a.facts_scanned for a in report.agents)
    return DemoResult(
        agent_id=agent_id,
        store="",
        store_removed=False,
        embedder=kernel.embedder.name,
        naive_top_k=NAIVE_TOP_K,
        token_budget=kernel.config.context.token_budget,
        turns=tuple(played.traces.values()),
        stale_fact=stale,
        duplicate_episode=episode,
        noise=chatter,
        duplicate_decisions=same,
        greeting=hey,
        long_message_update=update,
        seeds=outcomes.seed_rows(stale, episode, chatter, same, hey, update),
        totals=totals,
        consolidation=consolidation,
    )
