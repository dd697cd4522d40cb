"""Load: N simulated agents run pre_turn/post_turn loops (plus a learned fact every few
turns) for a fixed time against one kernel, on the embedded server by default.

    python benchmarks/load.py                          # 100 agents, 60 s
    python benchmarks/load.py --agents 200 --duration 300
    python benchmarks/load.py --dsn postgresql://…     # your server instead of the embedded one

Prints turns, throughput, pre_turn/post_turn p50/p99/max, errors (must be 0) and the growth
of the database. The short CI version is ``tests/faults/test_load.py`` (a few seconds).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.table import Table
from sqlalchemy import text

from memory_kernel import MemoryKernel, MemoryKernelConfig
from memory_kernel.models.facts import FactInput
from memory_kernel.models.turns import TurnInput, TurnOutcome

console = Console()

MESSAGES = [
    ("How should we store the embeddings for search?", "decision"),
    ("What's the status of release 0.6?", "question"),
    ("The deploy failed with a timeout, can you debug it?", "debug"),
    ("Hey!", None),
    ("Shall we move the nightly backups to the new region?", "decision"),
]
RESPONSES = [
    "We'll keep embeddings in PostgreSQL with pgvector, because one store keeps "
    "transactions and vectors together.",
    "Release 0.6 is shipped and the changelog is published.",
    "The timeout came from the connection pool; we'll raise the pool size to 20.",
    "Hi! How can I help?",
    "We'll move backups to eu-west-2 next week because storage there is cheaper.",
]


@dataclass
class LoadResult:
    agents: int
    duration_s: float
    turns: int = 0
    facts: int = 0
    pre: list[float] = field(default_factory=list)
    post: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    size_before: int = 0
    size_after: int = 0

    @property
    def throughput(self) -> float:
        return self.turns / self.duration_s if self.duration_s else 0.0


async def database_size(kernel: MemoryKernel) -> int:
    """Bytes of the kernel's tables (indexes and partitions included)."""
    query = text(
        "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c"
        " JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE n.nspname = :schema AND c.relkind = 'r'"
    )
    async with kernel.database.connection() as conn:
        return int(await conn.scalar(query, {"schema": kernel.config.storage.schema_name}) or 0)


async def _agent(
    kernel: MemoryKernel, index: int, deadline: float, result: LoadResult, fact_every: int
) -> None:
    agent, turn_no = f"load-agent-{index}", 0
    while time.monotonic() < deadline:
        message, frame = MESSAGES[(index + turn_no) % len(MESSAGES)]
        session = f"s{turn_no // 20}"  # a new session every 20 turns
        try:
            t0 = time.perf_counter()
            ctx = await kernel.pre_turn(
                TurnInput(agent_id=agent, session_id=session, message=message, frame=frame)
            )
            t1 = time.perf_counter()
            response = RESPONSES[(index + turn_no) % len(RESPONSES)]
            await kernel.post_turn(ctx.turn, TurnOutcome(response_text=response))
            t2 = time.perf_counter()
            result.pre.append(t1 - t0)
            result.post.append(t2 - t1)
            result.turns += 1
            if fact_every and turn_no % fact_every == 0:
                await kernel.heart.facts.learn(
                    FactInput(agent_id=agent, subject=f"topic {turn_no % 7}",
                              content=f"Agent {index} prefers option {turn_no} for topic "
                                      f"{turn_no % 7}")
                )  # fmt: skip
                result.facts += 1
        except Exception as exc:  # counted, never hidden: the run must show 0
            result.errors.append(f"{type(exc).__name__}: {exc}")
        turn_no += 1


async def run(
    kernel: MemoryKernel, *, agents: int, duration_s: float, fact_every: int = 5
) -> LoadResult:
    """Run the load against ``kernel`` and return the figures."""
    result = LoadResult(agents=agents, duration_s=duration_s)
    result.size_before = await database_size(kernel)
    deadline = time.monotonic() + duration_s
    started = time.monotonic()
    await asyncio.gather(*(_agent(kernel, i, deadline, result, fact_every) for i in range(agents)))
    result.duration_s = time.monotonic() - started
    result.size_after = await database_size(kernel)
    return result


def _ms(values: list[float], q: float) -> str:
    if not values:
        return "-"
    if q >= 1.0:
        return f"{max(values) * 1000:.1f}"
    cut = statistics.quantiles(values, n=100, method="inclusive")[int(q * 100) - 1]
    return f"{cut * 1000:.1f}"


def report(result: LoadResult) -> Table:
    table = Table(title=f"load: {result.agents} agents, {result.duration_s:.0f} s")
    for column in ("figure", "value"):
        table.add_column(column)
    growth = result.size_after - result.size_before
    rows = [
        ("turns (pre_turn + post_turn)", f"{result.turns}"),
        ("facts learned", f"{result.facts}"),
        ("throughput, turns/s", f"{result.throughput:.1f}"),
        ("pre_turn p50 / p99 / max, ms",
         f"{_ms(result.pre, 0.5)} / {_ms(result.pre, 0.99)} / {_ms(result.pre, 1.0)}"),
        ("post_turn p50 / p99 / max, ms",
         f"{_ms(result.post, 0.5)} / {_ms(result.post, 0.99)} / {_ms(result.post, 1.0)}"),
        ("errors", f"{len(result.errors)}"),
        ("database size before / after, MB",
         f"{result.size_before / 1e6:.1f} / {result.size_after / 1e6:.1f}"),
        ("growth per turn, KB", f"{growth / max(result.turns, 1) / 1e3:.2f}"),
    ]  # fmt: skip
    for name, value in rows:
        table.add_row(name, value)
    return table


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=100)
    parser.add_argument("--duration", type=float, default=60.0, help="seconds")
    parser.add_argument("--fact-every", type=int, default=5, help="learn a fact every N turns")
    parser.add_argument("--pool-size", type=int, default=20)
    parser.add_argument("--dsn", default=None)
    args = parser.parse_args()
    config = MemoryKernelConfig.from_mapping(
        {"storage": {"pool_size": args.pool_size, "max_overflow": args.pool_size}}
    )
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = None if args.dsn else Path(tmp) / "pg"
        async with MemoryKernel.open(args.dsn, config=config, data_dir=data_dir) as kernel:
            result = await run(
                kernel, agents=args.agents, duration_s=args.duration, fact_every=args.fact_every
            )
    console.print(report(result))
    for error in sorted(set(result.errors))[:10]:
        console.print(f"[red]error[/red] {error}")
    if result.errors:
        raise SystemExit(1)


if __name__ == "__main__":
    asyncio.run(main())
