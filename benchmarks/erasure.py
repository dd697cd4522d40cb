"""Latency of erasure in a large agent: ``forget`` of one fact, of one turn, of a session,
and ``erase_agent`` in the shared partition and in partitions of its own; and the time to
export the whole agent and import it as another (``import_agent``, vectors made again).

Seeds one agent with ``--facts`` facts in chains of supersession (every tenth subject has
three versions) and ``--sessions`` conversations of ten exchanges through the hooks, and a
second agent alike (what must not slow down or change). A ``learn`` of one fact is timed in
the same minutes as the reference: erasure runs the agent's version links as recursive
queries, so compare their ratio, not raw milliseconds, across runs on this noisy host.

    python benchmarks/erasure.py                       # embedded server in a temp dir
    python benchmarks/erasure.py --dsn postgresql://... --facts 20000 --sessions 100
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path

from sqlalchemy import select

from memory_kernel import FactInput, HashingEmbedder, MemoryKernel, MemoryKernelConfig
from memory_kernel.models.turns import TurnInput, TurnOutcome
from memory_kernel.storage.partitions import rebalance
from memory_kernel.storage.tables import facts, turns
from memory_kernel.testing import FrozenClock

AGENTS = ("bench-a", "bench-b")


async def _seed(kernel: MemoryKernel, agent: str, n_facts: int, sessions: int) -> None:
    batch = [
        FactInput(agent_id=agent, subject=f"service {i // 3} owner" if i % 30 < 3 else None,
                  content=f"Service {i // 3 if i % 30 < 3 else i} is owned by team {i % 97}.")
        for i in range(n_facts)
    ]  # fmt: skip
    for start in range(0, len(batch), 1000):
        await kernel.heart.facts.learn_many(batch[start : start + 1000])
    for s in range(sessions):
        for e in range(10):
            ctx = await kernel.pre_turn(
                TurnInput(agent_id=agent, session_id=f"s{s}", message=f"Deploy {s}-{e} to eu?")
            )
            await kernel.post_turn(ctx.turn, TurnOutcome(response_text=f"Deployed {s}-{e}."))
        await kernel.end_session(agent, f"s{s}")


async def _timed(calls: list[Callable[[], Awaitable[object]]]) -> tuple[float, float]:
    took = []
    for call in calls:
        start = time.perf_counter()
        await call()
        took.append((time.perf_counter() - start) * 1000)
    took.sort()
    return statistics.median(took), took[min(len(took) - 1, int(len(took) * 0.99))]


async def _ids(kernel: MemoryKernel, table: str, agent: str, n: int) -> list[uuid.UUID]:
    """``n`` ids spread over the agent's rows; for facts, ones outside every version chain
    (a chain goes whole with its newest fact, and an id must still be there when named)."""
    t = facts if table == "facts" else turns
    query = select(t.c.id).where(t.c.agent_id == agent)
    if table == "facts":
        query = query.where(facts.c.subject.is_(None))
    async with kernel.database.connection() as conn:
        found = list((await conn.scalars(query.limit(n * 5))).all())
    return found[::5][:n]


async def _move(kernel: MemoryKernel, agent: str) -> None:
    """Export ``agent`` whole and import it as another agent, timed; the copy is erased."""
    start = time.perf_counter()
    records = [r async for r in kernel.export_agent(agent)]
    exported = time.perf_counter() - start
    start = time.perf_counter()
    report = await kernel.import_agent(records, agent_id="bench-copy")
    imported = time.perf_counter() - start
    print(f"{'export the whole agent':38s} {exported:8.2f} s   ({len(records)} rows)")
    print(f"{'import it as another agent':38s} {imported:8.2f} s   "
          f"({len(records) / imported:,.0f} rows/s, {report.embedded} embedded)")  # fmt: skip
    await kernel.erase_agent("bench-copy")


async def main(dsn: str | None, n_facts: int, sessions: int, ops: int) -> None:
    with tempfile.TemporaryDirectory(prefix="mk-bench-erasure-") as tmp:
        config = MemoryKernelConfig.from_mapping(
            # Agents move to partitions of their own only in maintenance (rebalance), so the
            # first agent stays in the shared partition until it is erased.
            {"storage": {"schema_name": "bench_erasure", "dedicated_partition_rows": 5000},
             "extraction": {"worker": False}}
        )  # fmt: skip
        async with MemoryKernel.open(
            dsn, config=config, embedder=HashingEmbedder(), clock=FrozenClock(),
            data_dir=None if dsn else Path(tmp) / "pg",
        ) as kernel:  # fmt: skip
            for agent in AGENTS:
                await _seed(kernel, agent, n_facts, sessions)
            a = AGENTS[0]
            learn: list[Callable[[], Awaitable[object]]] = [
                partial(kernel.heart.facts.learn,
                        FactInput(agent_id=a, content=f"Queue {i} drains at {i % 12} am."))
                for i in range(ops)
            ]  # fmt: skip
            fact_ids = await _ids(kernel, "facts", a, ops)
            turn_ids = await _ids(kernel, "turns", a, ops)
            rows: list[tuple[str, list[Callable[[], Awaitable[object]]]]] = [
                ("learn one fact (reference)", learn),
                ("forget one fact", [partial(kernel.forget, a, [i]) for i in fact_ids]),
                ("forget one turn", [partial(kernel.forget, a, [i]) for i in turn_ids]),
                ("forget one session (10 exchanges)",
                 [partial(kernel.forget_session, a, f"s{s}") for s in range(min(ops, 20))]),
            ]  # fmt: skip
            print(f"agent: {n_facts} facts, {sessions} sessions x 10 exchanges (and another alike)")
            reference = None
            for name, calls in rows:
                p50, p99 = await _timed(calls)
                reference = reference or p50
                print(f"{name:38s} p50 {p50:8.1f} ms  p99 {p99:8.1f} ms  x{p50 / reference:5.1f}")
            await _move(kernel, a)
            start = time.perf_counter()
            report = await kernel.erase_agent(a)
            took = (time.perf_counter() - start) * 1000
            shared = "erase_agent, shared partition"
            print(f"{shared:38s} {took:8.1f} ms  ({report.memories} memories)")
            promoted = await rebalance(kernel.database, kernel.clock.now())
            start = time.perf_counter()
            report = await kernel.erase_agent(AGENTS[1])
            took = (time.perf_counter() - start) * 1000
            own = "erase_agent, partitions of its own"
            print(f"{own:38s} {took:8.1f} ms  ({report.memories} memories, "
                  f"{report.partitions} partitions; {len(promoted)} promoted)")  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dsn", default=None)
    parser.add_argument("--facts", type=int, default=10_000)
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--ops", type=int, default=30)
    args = parser.parse_args()
    asyncio.run(main(args.dsn, args.facts, args.sessions, args.ops))
