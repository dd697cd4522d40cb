"""Per-agent top-10 vector search: recall against exact search and latency, next to the exact
btree+sort baseline, at 100k and 1M rows over 100 agents (384-d clustered vectors).

    python benchmarks/search.py                       # 100k and 1M rows (about 10 minutes)
    python benchmarks/search.py --sizes 100000        # quick run
    python benchmarks/search.py --data-dir /tmp/mk-search --reuse   # load once, then seconds
    python benchmarks/search.py --dsn postgresql://…  # your server instead of the embedded one
    python benchmarks/search.py --diagnose            # + raw asyncpg, server time, GC pauses
    python benchmarks/search.py --shared-buffers-mb 128   # Postgres's stock memory, to compare

What it measures, in one run on the same data:
- ``memory-kernel``: ``storage.search.nearest`` as the library calls it (SQLAlchemy, agent
  partitions: exact in the shared partition, HNSW in promoted ones), after ``rebalance``.
- ``exact btree+sort``: one unpartitioned table, rows inserted interleaved across agents, a
  btree on ``agent_id`` and ``ORDER BY embedding <=> q LIMIT 10`` — complete but slow.
Recall@10 is measured against numpy's exact top-10. Each design runs in its own pass (so one
does not evict the other's pages): a warm-up (``--warmup`` other queries per agent, then the
measured ones once), then ``--queries`` timed queries per agent, round-robin over the agents
as a busy server would see them. The steady state of a warm server, not a cold start.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg
import numpy as np
import numpy.typing as npt
from machine import cpu_ns_per_step
from pgvector.asyncpg import register_vector
from rich.console import Console
from rich.table import Table
from sqlalchemy import make_url, text

from memory_kernel import MemoryKernel, MemoryKernelConfig
from memory_kernel.config import StorageConfig
from memory_kernel.storage.embedded import EmbeddedServer
from memory_kernel.storage.partitions import rebalance
from memory_kernel.storage.search import knn_sql, nearest
from memory_kernel.storage.tables import facts
from memory_kernel.storage.url import normalise_dsn
from memory_kernel.testing import FakeEmbedder

DIM = 384
K = 10
NOW = datetime(2026, 1, 1, tzinfo=UTC)
Matrix = npt.NDArray[np.float32]
Query = tuple[str, Matrix, set[uuid.UUID]]  # agent, vector, exact top-k ids
console = Console(width=120)
# The library's query (both search tiers), exactly as nearest() sends it for plain columns.
_SQL = knn_sql("facts", select='"id"', vector="$2", agent="$1", k=str(K))


@dataclass
class Result:
    rows: int
    design: str
    recall: float
    p50_ms: float
    p99_ms: float
    note: str = ""


@dataclass
class Workload:
    rows: int
    data: dict[str, Matrix]
    warmup: list[Query]
    measured: list[Query]


NOISE = 1.0  # noise norm relative to the cluster centre's (set by --noise)


def clustered(rng: np.random.Generator, n: int, clusters: int) -> Matrix:
    """Unit vectors around ``clusters`` random centres: realistic, not trivially separable."""
    centres = rng.normal(size=(clusters, DIM))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    spread = rng.uniform(0.6, 1.2, size=(clusters, 1))
    labels = rng.integers(0, clusters, size=n)
    noise = rng.normal(size=(n, DIM)) / np.sqrt(DIM)  # unit-norm noise on average
    points = centres[labels] + NOISE * spread[labels] * noise
    points /= np.linalg.norm(points, axis=1, keepdims=True)
    return np.asarray(points, dtype=np.float32)


def row_id(agent: int, n: int) -> uuid.UUID:
    """Deterministic ids, so a reused data directory still matches the regenerated truth."""
    return uuid.UUID(int=(agent << 64) | n)


def workload(rows: int, agents: int, warmup: int, queries: int) -> Workload:
    """The same data and queries for the same arguments (a reused data dir relies on it)."""
    rng = np.random.default_rng(rows)
    per_agent = rows // agents
    data = {f"agent-{a:03d}": clustered(rng, per_agent, clusters=30) for a in range(agents)}
    # Queries come from each agent's own distribution: perturbed copies of its vectors.
    per_agent_queries: dict[str, list[Query]] = {}
    for a, (agent, vectors) in enumerate(data.items()):
        picks = vectors[rng.integers(0, len(vectors), size=warmup + queries)]
        noisy = picks + 0.05 * rng.normal(size=picks.shape)
        unit = (noisy / np.linalg.norm(noisy, axis=1, keepdims=True)).astype(np.float32)
        per_agent_queries[agent] = [
            (agent, q, {row_id(a, int(i)) for i in np.argsort(-(vectors @ q))[:K]}) for q in unit
        ]
    # Round-robin over agents: query j of every agent, then query j + 1.
    ordered = [per_agent_queries[a][j] for j in range(warmup + queries) for a in data]
    cut = warmup * len(data)
    return Workload(rows, data, ordered[:cut], ordered[cut:])


async def connect(dsn: str, storage: StorageConfig, *, vector: bool = True) -> Any:
    """An asyncpg connection with the pool's session settings (``Database.create``: schema
    quoted in ``search_path``); pgvector's codec once the extension exists (``vector``)."""
    url = make_url(dsn).set(drivername="postgresql")
    driver = await asyncpg.connect(
        url.render_as_string(hide_password=False),
        server_settings={
            "search_path": f'"{storage.schema_name}", public',
            "hnsw.ef_search": str(storage.hnsw_ef_search),
            "hnsw.iterative_scan": "relaxed_order",
            "plan_cache_mode": "force_custom_plan",
            "max_parallel_workers_per_gather": "0",
        },
    )
    if vector:
        await register_vector(driver)
    return driver


async def raw(kernel: MemoryKernel) -> Any:
    """A separate asyncpg connection to the kernel's server and schema."""
    url = kernel.database.engine.url.render_as_string(hide_password=False)
    return await connect(url, kernel.database.config)


@asynccontextmanager
async def server(dsn: str | None, data_dir: Path, storage: StorageConfig) -> AsyncIterator[str]:
    """``--dsn``, or the embedded server in ``data_dir`` held for the whole size: one server
    start for the reset, the kernel's migration, the load and the measures."""
    if dsn is not None:
        yield normalise_dsn(dsn)
        return
    embedded = await EmbeddedServer.start(data_dir, storage)
    try:
        yield embedded.dsn
    finally:
        await embedded.stop()


async def load(kernel: MemoryKernel, work: Workload) -> None:
    """COPY the agents' vectors into ``facts`` (grouped) and ``baseline`` (interleaved)."""
    driver = await raw(kernel)
    async with driver.transaction():
        await driver.execute("DROP TABLE IF EXISTS baseline")
        await driver.execute(
            f"CREATE TABLE baseline (agent_id text, id uuid, embedding vector({DIM}))"
        )
        columns = ["agent_id", "id", "content", "confidence", "status", "embedding"]
        columns += ["last_evidence_at", "valid_from", "created_at", "updated_at"]
        flat: list[tuple[str, uuid.UUID, Matrix]] = []
        for a, (agent, vectors) in enumerate(work.data.items()):
            ids = [row_id(a, n) for n in range(len(vectors))]
            records = [
                (agent, i, f"{agent} memory {n}", 0.7, "active", v, NOW, NOW, NOW, NOW)
                for n, (i, v) in enumerate(zip(ids, vectors, strict=True))
            ]
            await driver.copy_records_to_table("facts", records=records, columns=columns)
            flat += [(agent, i, v) for i, v in zip(ids, vectors, strict=True)]
        order = np.random.default_rng(0).permutation(len(flat))
        await driver.copy_records_to_table(
            "baseline", records=[flat[j] for j in order], columns=["agent_id", "id", "embedding"]
        )
        await driver.execute("CREATE INDEX ON baseline (agent_id)")
    await driver.execute("ANALYZE facts")
    await driver.execute("ANALYZE baseline")
    await driver.close()


async def settle(kernel: MemoryKernel) -> None:
    """VACUUM what the bulk load and the promotions left (the default partition's moved-out
    rows, unset hint bits), so autovacuum does not do it in the middle of the timed queries."""
    driver = await raw(kernel)
    for table in ("facts", "baseline"):
        await driver.execute(f"VACUUM (ANALYZE) {table}")
    await driver.close()


async def loaded_rows(dsn: str, storage: StorageConfig) -> int:
    """Rows of an earlier load in the schema (0: none), read before any kernel opens it."""
    driver = await connect(dsn, storage, vector=False)
    try:
        if await driver.fetchval("SELECT to_regclass('baseline')") is None:
            return 0
        return int(await driver.fetchval("SELECT count(*) FROM baseline") or 0)
    finally:
        await driver.close()


async def drop_schema(dsn: str, storage: StorageConfig) -> None:
    """An empty schema (no partitions left from an earlier run); the kernel then migrates."""
    driver = await connect(dsn, storage, vector=False)
    try:
        await driver.execute(f'DROP SCHEMA IF EXISTS "{storage.schema_name}" CASCADE')
    finally:
        await driver.close()


Search = Callable[[str, Matrix], Awaitable[set[uuid.UUID]]]


@contextmanager
def gc_pauses() -> Iterator[list[float]]:
    """Durations (ms) of the garbage collections that ran inside the block."""
    pauses: list[float] = []
    started = [0.0]

    def watch(phase: str, _info: dict[str, Any]) -> None:
        if phase == "start":
            started[0] = time.perf_counter()
        else:
            pauses.append((time.perf_counter() - started[0]) * 1000)

    gc.callbacks.append(watch)
    try:
        yield pauses
    finally:
        gc.callbacks.remove(watch)


async def timed(work: Workload, search: Search, design: str) -> Result:
    """Warm up (every query once, so each design is timed on a warm cache whichever runs
    first after a server start), then time the measured queries."""
    for agent, vector, _ in work.warmup + work.measured:
        await search(agent, vector)
    times: list[float] = []
    hits = 0
    with gc_pauses() as pauses:
        for agent, vector, truth in work.measured:
            start = time.perf_counter()
            found = await search(agent, vector)
            times.append((time.perf_counter() - start) * 1000)
            hits += len(found & truth)
    note = f"GC {len(pauses)}x, max {max(pauses, default=0):.1f} ms" if pauses else ""
    return Result(work.rows, design, hits / (K * len(work.measured)), *pct(times), note)


async def server_side(driver: Any, work: Workload) -> Result:
    """Execution time inside Postgres (EXPLAIN ANALYZE) and the pages each query found in
    shared_buffers (hits) or had to read from the OS (reads), for the library's SQL."""
    times: list[float] = []
    hits = reads = 0
    stmt = await driver.prepare(f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {_SQL}")
    for agent, vector, _ in work.measured:
        plan = json.loads(await stmt.fetchval(agent, vector))[0]
        times.append(float(plan["Execution Time"]))
        hits += int(plan["Plan"].get("Shared Hit Blocks", 0))
        reads += int(plan["Plan"].get("Shared Read Blocks", 0))
    n = len(work.measured)
    note = f"pages/query: {hits / n:.0f} hit, {reads / n:.1f} read"
    return Result(work.rows, "  server execution only", float("nan"), *pct(times), note)


async def measure(kernel: MemoryKernel, work: Workload, diagnose: bool) -> list[Result]:
    results: list[Result] = []
    async with kernel.database.connection() as conn:

        async def library(agent: str, vector: Matrix) -> set[uuid.UUID]:
            rows = await nearest(
                conn, facts, agent_id=agent, vector=vector, k=K, columns=[facts.c.id]
            )
            return {r.id for r in rows}

        results.append(await timed(work, library, "memory-kernel (agent partitions)"))
    # Opened now, after the library's pass, and its statements prepared where they are used.
    driver = await raw(kernel)
    if diagnose:
        same = await driver.prepare(_SQL)

        async def direct(agent: str, vector: Matrix) -> set[uuid.UUID]:
            return {r["id"] for r in await same.fetch(agent, vector)}

        results.append(await timed(work, direct, "  same SQL, raw asyncpg"))
        results.append(await server_side(driver, work))
    base = await driver.prepare(
        f"SELECT id FROM baseline WHERE agent_id = $1 ORDER BY embedding <=> $2 LIMIT {K}"  # noqa: S608
    )

    async def baseline(agent: str, vector: Matrix) -> set[uuid.UUID]:
        return {r["id"] for r in await base.fetch(agent, vector)}

    results.append(await timed(work, baseline, "exact btree+sort baseline"))
    await driver.close()
    return results


def pct(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return statistics.median(ordered), p99


async def settings(kernel: MemoryKernel) -> str:
    async with kernel.database.connection() as conn:
        # current_setting, not pg_settings: a backend that has not loaded pgvector yet
        # lists no hnsw.* row there, though the pool's setting holds.
        rows = await conn.execute(
            text(
                "SELECT name, current_setting(name, true) FROM unnest(ARRAY['shared_buffers',"
                " 'effective_cache_size', 'io_method', 'hnsw.ef_search']) AS name"
            )
        )
        return ", ".join(f"{name}={value}" for name, value in rows if value is not None)


async def run_size(rows: int, args: argparse.Namespace, data_dir: Path) -> list[Result]:
    work = workload(rows, args.agents, args.warmup, args.queries)
    schema = f"bench_search_{rows}"
    # No background embedding worker: its polls would land between the timed queries.
    storage: dict[str, Any] = {"schema_name": schema}
    if args.shared_buffers_mb:
        storage["embedded_shared_buffers_mb"] = args.shared_buffers_mb
    if args.ef_search:
        storage["hnsw_ef_search"] = args.ef_search
    config = MemoryKernelConfig.from_mapping(
        {"storage": storage, "consolidation": {"embed_worker": False}}
    )
    async with server(args.dsn, data_dir, config.storage) as dsn:
        reuse = args.reuse and await loaded_rows(dsn, config.storage) == rows
        if not reuse:
            await drop_schema(dsn, config.storage)
        async with MemoryKernel.open(dsn, config=config, embedder=FakeEmbedder(DIM)) as kernel:
            return await run_open(kernel, work, args, reuse=reuse)


async def run_open(
    kernel: MemoryKernel, work: Workload, args: argparse.Namespace, *, reuse: bool
) -> list[Result]:
    """Load (unless reused), promote, settle and measure on the opened kernel."""
    rows, schema = work.rows, kernel.database.schema
    started = time.perf_counter()
    if not reuse:
        await load(kernel, work)
    loaded = time.perf_counter() - started
    started = time.perf_counter()
    promoted = await rebalance(kernel.database, NOW)  # a no-op on reused data
    if promoted or not reuse:
        await settle(kernel)
    balanced = time.perf_counter() - started
    console.print(
        f"[dim]{rows:,} rows: load {loaded:.1f}s, {len(promoted)} agents promoted to their"
        f" own HNSW partition (+ VACUUM) in {balanced:.1f}s; {await settings(kernel)}[/]"
    )
    results = await measure(kernel, work, args.diagnose)
    if args.dsn and not args.reuse:
        async with kernel.database.transaction() as conn:
            await conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
    return results


def report(results: list[Result], agents: int) -> None:
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    cpu = cpu_ns_per_step()
    title = f"per-agent top-{K} search, {agents} agents, {DIM}-d"
    table = Table(title=f"{title} (load {load}, CPU {cpu:.0f} ns/step)")
    for column in ("rows", "design", "recall@10", "p50 ms", "p99 ms", "note"):
        table.add_column(column, justify="left" if column in ("design", "note") else "right")
    for r in results:
        recall = "" if r.recall != r.recall else f"{r.recall:.3f}"
        table.add_row(f"{r.rows:,}", r.design, recall, f"{r.p50_ms:.2f}", f"{r.p99_ms:.2f}", r.note)
    console.print(table)
    baseline = {r.rows: r for r in results if r.design.startswith("exact")}
    for r in results:
        if r.design.startswith("memory-kernel"):
            ratio = baseline[r.rows].p99_ms / r.p99_ms
            console.print(f"{r.rows:,} rows: p99 {ratio:.1f}x faster than the exact baseline")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--sizes", default="100000,1000000", help="comma-separated row counts")
    parser.add_argument("--agents", type=int, default=100)
    parser.add_argument("--queries", type=int, default=20, help="measured queries per agent")
    parser.add_argument("--warmup", type=int, default=5, help="warm-up queries per agent")
    parser.add_argument("--dsn", default=None, help="PostgreSQL URL (default: embedded)")
    parser.add_argument(
        "--data-dir", type=Path, default=None, help="keep the embedded server's data here"
    )
    parser.add_argument(
        "--reuse", action="store_true", help="skip loading when the data is already there"
    )
    parser.add_argument(
        "--shared-buffers-mb",
        type=int,
        default=None,
        help="embedded server's shared_buffers (default: sized from RAM, see StorageConfig)",
    )
    parser.add_argument(
        "--ef-search",
        type=int,
        default=None,
        help="hnsw.ef_search of the searches (default: StorageConfig's)",
    )
    parser.add_argument(
        "--diagnose", action="store_true", help="add raw asyncpg and server-side rows"
    )
    parser.add_argument(
        "--noise",
        type=float,
        default=1.0,
        help="noise/centre norm ratio: 1 = clustered (default); 3 = near-random, HNSW's worst case",
    )
    args = parser.parse_args()
    global NOISE
    NOISE = args.noise
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="mk-bench-") as tmp:
        data_dir = args.data_dir or Path(tmp) / "pg"
        for rows in (int(s) for s in args.sizes.split(",")):
            results += asyncio.run(run_size(rows, args, data_dir))
    report(results, args.agents)


if __name__ == "__main__":
    main()
