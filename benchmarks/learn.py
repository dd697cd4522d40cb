"""Learn latency and learn_many throughput with many existing facts for one agent.

    python benchmarks/learn.py --sizes 10000 100000 --learns 300 --batch 1000

Seeds N facts (bulk, through learn_many), moves the agent to its own HNSW partition
(``rebalance``, as consolidation would), then measures single ``learn`` latency (p50/p99) and
``learn_many`` facts per second on fresh facts. Uses the embedded server unless
MEMORY_KERNEL_DSN is set; the HashingEmbedder is the embedder.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from memory_kernel import MemoryKernel, MemoryKernelConfig
from memory_kernel.models.facts import FactInput
from memory_kernel.storage.partitions import rebalance

_SYLLABLES = "ka lo mi ne ru sa ti vo be da fe gu ha ji ko lu ma no pe qu ri so tu ve wa"
_VERBS = ("owns", "reviews", "maintains", "monitors", "migrates", "documents", "tests")


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


async def _run(size: int, learns: int, batch: int, dsn: str | None) -> dict[str, float]:
    rng = random.Random(size)
    config = MemoryKernelConfig.from_mapping(
        {"storage": {"schema_name": f"bench_{uuid.uuid4().hex[:10]}"}}
    )
    with tempfile.TemporaryDirectory(prefix="mk-bench-") as tmp:
        async with MemoryKernel.open(dsn, config=config, data_dir=Path(tmp) / "pg") as kernel:
            agent = "bench-agent"
            svc = kernel.heart.facts
            for start in range(0, size, 5000):
                await svc.learn_many(_facts(agent, min(5000, size - start), rng))
                if start == 0:
                    # Consolidation would promote the agent once it outgrows the shared
                    # partition; seeding the rest then uses its HNSW index too.
                    await rebalance(kernel.database, kernel.clock.now())
            for f in _facts(agent, 20, rng):  # warm the connection pool and the caches
                await svc.learn(f)
            latencies = []
            for f in _facts(agent, learns, rng):
                t0 = time.perf_counter()
                await svc.learn(f)
                latencies.append((time.perf_counter() - t0) * 1000)
            items = _facts(agent, batch, rng)
            t0 = time.perf_counter()
            await svc.learn_many(items)
            rate = batch / (time.perf_counter() - t0)
    latencies.sort()
    return {
        "p50_ms": statistics.median(latencies),
        "p99_ms": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))],
        "learn_many_per_s": rate,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--learns", type=int, default=300)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--dsn", default=None)
    args = parser.parse_args()
    print(f"{'existing facts':>15} {'learn p50 ms':>13} {'learn p99 ms':>13} {'learn_many/s':>13}")
    for size in args.sizes:
        r = asyncio.run(_run(size, args.learns, args.batch, args.dsn))
        print(
            f"{size:>15,} {r['p50_ms']:>13.2f} {r['p99_ms']:>13.2f} {r['learn_many_per_s']:>13,.0f}"
        )


if __name__ == "__main__":
    main()
