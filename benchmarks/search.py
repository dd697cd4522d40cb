"""Per-agent top-10 vector search: recall against exact search and latency, next to the exact
btree+sort baseline, at 100k and 1M rows over 100 agents (384-d clustered vectors).

    python benchmarks/search.py                       # 100k and 1M rows (about 15 minutes)
    python benchmarks/search.py --sizes 100000        # quick run
    python benchmarks/search.py --dsn postgresql://…  # your server instead of the embedded one

What it measures, in one run on the same data:
- ``memory-kernel``: ``storage.search.nearest`` as the library calls it (SQLAlchemy, agent
  partitions: exact in the shared partition, HNSW in promoted ones), after ``rebalance``.
- ``exact btree+sort``: one unpartitioned table, rows inserted interleaved across agents, a
  btree on ``agent_id`` and ``ORDER BY embedding <=> q LIMIT 10`` — complete but slow.
Recall@10 is measured against numpy's exact top-10.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg
import numpy as np
import numpy.typing as npt
from pgvector.asyncpg import register_vector
from rich.console import Console
from rich.table import Table
from sqlalchemy import text

from memory_kernel import MemoryKernel, MemoryKernelConfig
from memory_kernel.storage.partitions import rebalance
from memory_kernel.storage.search import nearest
from memory_kernel.storage.tables import facts
from memory_kernel.testing import FakeEmbedder

DIM = 384
K = 10
NOW = datetime(2026, 1, 1, tzinfo=UTC)
Matrix = npt.NDArray[np.float32]
console = Console()


@dataclass
class Result:
    rows: int
    design: str
    recall: float
    p50_ms: float
    p99_ms: float
    note: str = ""


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


async def raw(kernel: MemoryKernel) -> Any:
    """A separate asyncpg connection with pgvector's binary codec (the pool's connections
    keep the text format SQLAlchemy's ``Vector`` type binds)."""
    url = kernel.database.engine.url.set(drivername="postgresql")
    driver = await asyncpg.connect(
        url.render_as_string(hide_password=False),
        server_settings={"search_path": f"{kernel.database.schema}, public"},
    )
    await register_vector(driver)
    return driver


async def load(
    kernel: MemoryKernel, data: dict[str, Matrix], rng: np.random.Generator
) -> dict[str, list[uuid.UUID]]:
    """COPY the agents' vectors into ``facts`` (grouped) and ``baseline`` (interleaved)."""
    ids = {agent: [uuid.uuid4() for _ in range(len(v))] for agent, v in data.items()}
    driver = await raw(kernel)
    async with driver.transaction():
        await driver.execute(
            f"CREATE TABLE baseline (agent_id text, id uuid, embedding vector({DIM}))"
        )
        columns = ["agent_id", "id", "content", "confidence", "status", "embedding"]
        columns += ["last_evidence_at", "valid_from", "created_at", "updated_at"]
        for agent, vectors in data.items():
            records = [
                (agent, i, f"{agent} memory {n}", 0.7, "active", v, NOW, NOW, NOW, NOW)
                for n, (i, v) in enumerate(zip(ids[agent], vectors, strict=True))
            ]
            await driver.copy_records_to_table("facts", records=records, columns=columns)
        flat = [(a, i, v) for a in data for i, v in zip(ids[a], data[a], strict=True)]
        order = rng.permutation(len(flat))
        await driver.copy_records_to_table(
            "baseline", records=[flat[j] for j in order], columns=["agent_id", "id", "embedding"]
        )
        await driver.execute("CREATE INDEX ON baseline (agent_id)")
    await driver.execute("ANALYZE facts")
    await driver.execute("ANALYZE baseline")
    await driver.close()
    return ids


def exact_ids(vectors: Matrix, query: Matrix) -> list[int]:
    return list(np.argsort(-(vectors @ query), kind="stable")[:K])


async def measure(
    kernel: MemoryKernel,
    data: dict[str, Matrix],
    ids: dict[str, list[uuid.UUID]],
    queries: dict[str, Matrix],
    rows: int,
) -> list[Result]:
    lib_times: list[float] = []
    base_times: list[float] = []
    lib_hits = base_hits = total = 0
    driver = await raw(kernel)
    async with kernel.database.connection() as conn:
        stmt = await driver.prepare(
            "SELECT id FROM baseline WHERE agent_id = $1 ORDER BY embedding <=> $2 LIMIT 10"
        )
        for warm in (True, False):
            for agent, agent_queries in queries.items():
                for query in agent_queries:
                    truth = {ids[agent][i] for i in exact_ids(data[agent], query)}
                    start = time.perf_counter()
                    hits = await nearest(
                        conn, facts, agent_id=agent, vector=query, k=K, columns=[facts.c.id]
                    )
                    lib = time.perf_counter() - start
                    start = time.perf_counter()
                    base = await stmt.fetch(agent, query)
                    exact = time.perf_counter() - start
                    if warm:
                        continue
                    lib_times.append(lib * 1000)
                    base_times.append(exact * 1000)
                    lib_hits += len({h.id for h in hits} & truth)
                    base_hits += len({r["id"] for r in base} & truth)
                    total += K
    await driver.close()
    return [
        Result(rows, "memory-kernel (agent partitions)", lib_hits / total, *pct(lib_times)),
        Result(rows, "exact btree+sort baseline", base_hits / total, *pct(base_times)),
    ]


def pct(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return statistics.median(ordered), p99


async def run_size(rows: int, agents: int, per_agent_queries: int, dsn: str | None) -> list[Result]:
    rng = np.random.default_rng(rows)
    per_agent = rows // agents
    data = {f"agent-{a:03d}": clustered(rng, per_agent, clusters=30) for a in range(agents)}
    # Queries come from each agent's own distribution: perturbed copies of its vectors.
    queries: dict[str, Matrix] = {}
    for agent, vectors in data.items():
        picks = vectors[rng.integers(0, len(vectors), size=per_agent_queries)]
        noisy = picks + 0.05 * rng.normal(size=picks.shape)
        queries[agent] = (noisy / np.linalg.norm(noisy, axis=1, keepdims=True)).astype(np.float32)
    schema = f"bench_search_{rows}"
    config = MemoryKernelConfig.from_mapping({"storage": {"schema_name": schema}})
    with tempfile.TemporaryDirectory(prefix="mk-bench-") as tmp:
        async with MemoryKernel.open(
            dsn, config=config, embedder=FakeEmbedder(DIM), data_dir=Path(tmp) / "pg"
        ) as kernel:
            async with kernel.database.transaction() as conn:
                await conn.execute(text("DROP TABLE IF EXISTS baseline"))
            started = time.perf_counter()
            ids = await load(kernel, data, rng)
            loaded = time.perf_counter() - started
            started = time.perf_counter()
            promoted = await rebalance(kernel.database, NOW)
            balanced = time.perf_counter() - started
            console.print(
                f"[dim]{rows:,} rows: load {loaded:.1f}s, {len(promoted)} agents promoted to "
                f"their own HNSW partition in {balanced:.1f}s[/]"
            )
            results = await measure(kernel, data, ids, queries, rows)
            if dsn:
                async with kernel.database.transaction() as conn:
                    await conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100000,1000000", help="comma-separated row counts")
    parser.add_argument("--agents", type=int, default=100)
    parser.add_argument("--queries", type=int, default=20, help="queries per agent")
    parser.add_argument("--dsn", default=None, help="PostgreSQL URL (default: embedded)")
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
    for rows in (int(s) for s in args.sizes.split(",")):
        results += asyncio.run(run_size(rows, args.agents, args.queries, args.dsn))
    table = Table(title=f"per-agent top-{K} search, {args.agents} agents, {DIM}-d")
    for column in ("rows", "design", "recall@10", "p50 ms", "p99 ms"):
        table.add_column(column, justify="right" if column != "design" else "left")
    for r in results:
        table.add_row(
            f"{r.rows:,}", r.design, f"{r.recall:.3f}", f"{r.p50_ms:.2f}", f"{r.p99_ms:.2f}"
        )
    console.print(table)
    baseline = {r.rows: r for r in results if r.design.startswith("exact")}
    for r in results:
        if not r.design.startswith("exact"):
            ratio = baseline[r.rows].p99_ms / r.p99_ms
            console.print(f"{r.rows:,} rows: p99 {ratio:.1f}x faster than the exact baseline")


if __name__ == "__main__":
    main()
