"""Latency of episode start (dedup) and end (admission) with many existing episodes.

Seeds one agent with ``--episodes`` finished, admitted episodes (plus a few ongoing ones in
the dedup window), promotes it to its own HNSW partition as consolidation would, then
times ``start`` and ``end`` one call at a time with the default rule judge. Half of the
ends repeat a stored run's summary, so the judge stage (NOT / REPLACE / MERGE) is timed
too, not only the pre-filter's ADD.

    python benchmarks/episodes.py                    # embedded server in a temp dir
    python benchmarks/episodes.py --dsn postgresql://... --episodes 10000 --ops 300
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
import uuid
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import event, text

from memory_kernel import HashingEmbedder, MemoryKernel, MemoryKernelConfig
from memory_kernel.models.episodes import EpisodeInput
from memory_kernel.storage.partitions import rebalance
from memory_kernel.storage.tables import episodes
from memory_kernel.testing import FrozenClock

AGENT = "bench-agent"
OUTCOMES = ("success", "success", "failure", "partial")
_WORDS = [f"{a}{b}" for a in ("re", "de", "pro", "con", "sub", "tra", "ex", "in") for b in (
    "port", "ploy", "view", "load", "ject", "form", "pact", "tain", "verse", "scribe", "mit",
    "sign", "solve", "press", "cept", "duct", "tend", "vert", "fer", "pose")]  # fmt: skip


def summary(rng: random.Random) -> str:
    return " ".join(rng.choices(_WORDS, k=rng.randint(6, 12))) + f" task {rng.randint(0, 10**6)}"


async def seed(kernel: MemoryKernel, n: int, rng: random.Random, now: datetime) -> list[str]:
    """Insert ``n`` finished, admitted episodes in bulk; returns their summaries."""
    texts = [summary(rng) for _ in range(n)]
    embedder = HashingEmbedder(kernel.embedder.dim)
    for lo in range(0, n, 1000):
        chunk = texts[lo : lo + 1000]
        vectors = embedder.embed_sync(chunk)
        rows = [
            {
                "agent_id": AGENT,
                "id": uuid.uuid4(),
                "session_id": "seed",
                "summary": t,
                "status": "completed",
                "outcome": rng.choice(OUTCOMES),
                "admission": "active",
                "embedding": v,
                "references": [f"ref-{rng.randint(0, 50)}"],
                "started_at": now - timedelta(days=1),
                "ended_at": now - timedelta(hours=20),
                "created_at": now,
                "updated_at": now,
            }
            for t, v in zip(chunk, vectors, strict=True)
        ]
        async with kernel.database.transaction() as conn:
            await conn.execute(episodes.insert(), rows)
    for _ in range(20):  # a few ongoing episodes inside the dedup window
        await kernel.heart.episodes.start(
            EpisodeInput(agent_id=AGENT, session_id="live", summary=summary(rng))
        )
    return texts


def _ms(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return 1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def round_trips(kernel: MemoryKernel, n: int) -> list[float]:
    """A transaction with one trivial statement: the floor every write pays (machine load
    shows here first)."""
    samples = []
    for _ in range(n):
        t0 = time.perf_counter()
        async with kernel.database.transaction() as conn:
            await conn.execute(text("SELECT 1"))
        samples.append(time.perf_counter() - t0)
    return samples


async def measure(
    kernel: MemoryKernel, stored: list[str], ops: int, rng: random.Random, *, show: bool = True
) -> None:
    starts: list[float] = []
    ends: list[float] = []
    decisions: Counter[str] = Counter()
    statements = Counter[str]()
    phase = ["start"]

    def count(*_: object) -> None:
        statements[phase[0]] += 1

    # Statements per call (plus BEGIN/COMMIT): the load-independent side of the latency.
    event.listen(kernel.database.engine.sync_engine, "before_cursor_execute", count)
    for i in range(ops):
        repeat = i % 2 == 1  # every other run repeats a stored task
        text_ = rng.choice(stored) if repeat else summary(rng)
        phase[0] = "start"
        t0 = time.perf_counter()
        started = await kernel.heart.episodes.start(
            EpisodeInput(agent_id=AGENT, session_id=f"s{i}", summary=text_)
        )
        t1 = time.perf_counter()
        phase[0] = "end"
        end = await kernel.heart.episodes.end(
            started.episode.id,
            agent_id=AGENT,
            outcome=rng.choice(OUTCOMES),
            references=[f"ref-{rng.randint(0, 50)}"],
        )
        t2 = time.perf_counter()
        starts.append(t1 - t0)
        ends.append(t2 - t1)
        decisions[f"{end.decision.value} ({end.decided_by})"] += 1
    event.remove(kernel.database.engine.sync_engine, "before_cursor_execute", count)
    if not show:
        return
    baseline = await round_trips(kernel, ops)
    print(f"{'operation':<28}{'n':>6}{'p50 ms':>10}{'p99 ms':>10}{'mean ms':>10}")
    rows = (
        ("start (dedup)", starts),
        ("end (admission, rules)", ends),
        ("baseline: 1-statement tx", baseline),
    )
    for name, samples in rows:
        mean = 1000 * statistics.fmean(samples)
        print(
            f"{name:<28}{len(samples):>6}{_ms(samples, 0.5):>10.2f}{_ms(samples, 0.99):>10.2f}"
            f"{mean:>10.2f}"
        )
    per = {k: v / ops for k, v in statements.items()}
    print(f"statements per call: start {per['start']:.2f}, end {per['end']:.2f}")
    print("decisions: " + ", ".join(f"{k} {v}" for k, v in sorted(decisions.items())))


async def run(args: argparse.Namespace) -> None:
    rng = random.Random(args.seed)
    clock = FrozenClock(datetime(2026, 1, 1, 12, tzinfo=UTC))
    schema = f"bench_{uuid.uuid4().hex[:8]}"
    config = MemoryKernelConfig.from_mapping({"storage": {"schema_name": schema}})
    with tempfile.TemporaryDirectory(prefix="mk-bench-") as tmp:
        data_dir = None if args.dsn else Path(tmp) / "pg"
        async with MemoryKernel.open(
            args.dsn, config=config, clock=clock, data_dir=data_dir
        ) as kernel:
            t0 = time.perf_counter()
            stored = await seed(kernel, args.episodes, rng, clock.now())
            promoted = [] if args.no_rebalance else await rebalance(kernel.database, clock.now())
            own = any(p.table == "episodes" for p in promoted)
            print(f"seeded {args.episodes} episodes in {time.perf_counter() - t0:.1f}s; ", end="")
            print(f"own HNSW partition: {own}")
            await measure(kernel, stored, args.warmup, rng, show=False)  # warm caches, pool
            await measure(kernel, stored, args.ops, rng)
            if args.dsn:
                async with kernel.database.transaction() as conn:
                    await conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))


def main() -> None:
    parser = argparse.ArgumentParser(description="episode start/end latency")
    parser.add_argument("--dsn", help="PostgreSQL + pgvector DSN (default: embedded server)")
    parser.add_argument("--episodes", type=int, default=10_000, help="existing episodes")
    parser.add_argument("--ops", type=int, default=300, help="timed start+end pairs")
    parser.add_argument("--warmup", type=int, default=30, help="untimed pairs first")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--no-rebalance", action="store_true", help="stay in the shared partition")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
