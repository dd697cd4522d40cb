"""Fact extraction: what it costs post_turn, and how fast the queue drains.

    python benchmarks/extraction.py --dsn postgresql://…   # your server (else embedded)
    python benchmarks/extraction.py --rounds 6 --turns 50 --drain 500

Two kernels on two schemas of one server, seeded alike (``benchmarks/hooks.py``'s 10k
decisions): A without an extractor (today's ``post_turn``), B with ``FakeExtractor`` (the
deterministic extractor of ``memory_kernel.testing``; the background worker off, so nothing
drains while turns are measured). The same deliberating turn as ``benchmarks/hooks.py``,
whose message also says "My <slot> is <value>" (50 slots, so later values supersede).

- ``post_turn`` p50: A and B alternate turn by turn (A B A B…; a round starts with A, the
  next with B), so the shared host's load hits both alike; the ratio B/A is given per round
  and overall. B's queue is not drained meanwhile, so both hold the same memories.
- drain: B's queue (every turn B's rounds queued, then ``--drain`` more exchanges) drained
  by ``extract_pending`` — claim, extract, embed, learn (admission, dedup, supersession) and
  delete — in turns per second, three times.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from hooks import AGENT, deliberating_turn, seed
from machine import cpu_ns_per_step
from rich.console import Console
from rich.table import Table
from sqlalchemy import text

from memory_kernel import MemoryKernel, MemoryKernelConfig
from memory_kernel.models.turns import TurnInput, TurnOutcome
from memory_kernel.testing import FakeEmbedder, FakeExtractor, FrozenClock

SLOTS = [f"{a} {b}" for a in ("home", "work", "travel", "team", "project")
         for b in ("city", "budget", "deadline", "contact", "vendor", "plan", "code", "tool",
                   "room", "bank")]  # fmt: skip
console = Console()


def _turn(i: int) -> tuple[TurnInput, TurnOutcome]:
    return deliberating_turn(i, f" My {SLOTS[i % len(SLOTS)]} is value {i}.")


class Side:
    def __init__(self, kernel: MemoryKernel, clock: FrozenClock) -> None:
        self.kernel, self.clock, self.n = kernel, clock, 0

    async def post_turns(self, count: int) -> list[float]:
        """``count`` turns; the post_turn milliseconds of each."""
        return [await self.one() for _ in range(count)]

    async def one(self) -> float:
        """One turn; its post_turn milliseconds."""
        self.clock.advance(seconds=7)
        turn, outcome = _turn(self.n)
        self.n += 1
        ctx = await self.kernel.pre_turn(turn)
        t0 = time.perf_counter()
        await self.kernel.post_turn(ctx.turn, outcome)
        return (time.perf_counter() - t0) * 1000


async def _open(dsn: str | None, data_dir: Path, extractor: FakeExtractor | None) -> Side:
    schema = f"bench_extract_{uuid.uuid4().hex[:8]}"
    # A: extraction off (also once a default extractor exists); B: the FakeExtractor.
    queue = {"worker": False, "enabled": extractor is not None}
    config = MemoryKernelConfig.from_mapping(
        {"storage": {"schema_name": schema}, "extraction": queue}
    )
    clock = FrozenClock()
    kernel = await MemoryKernel.open(
        dsn, config=config, embedder=FakeEmbedder(), clock=clock, data_dir=data_dir,
        extractor=extractor,
    )  # fmt: skip
    return Side(kernel, clock)


async def _close(side: Side, dsn: str | None) -> None:
    if dsn:
        async with side.kernel.database.transaction() as conn:
            schema = side.kernel.database.schema
            await conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
    await side.kernel.close()


async def run(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="mk-bench-") as tmp:
        a = await _open(args.dsn, Path(tmp) / "pg", None)
        b = await _open(args.dsn, Path(tmp) / "pg", FakeExtractor())
        try:
            for side in (a, b):
                await seed(side.kernel, args.decisions, side.clock)
                await side.post_turns(args.warmup)
            cpu_before = cpu_ns_per_step()
            per_round: list[tuple[float, float]] = []
            all_a: list[float] = []
            all_b: list[float] = []
            for r in range(args.rounds):
                order = (a, b) if r % 2 == 0 else (b, a)
                got: dict[int, list[float]] = {id(a): [], id(b): []}
                for _ in range(args.turns):
                    for side in order:
                        got[id(side)].append(await side.one())
                all_a += got[id(a)]
                all_b += got[id(b)]
                per_round.append((statistics.median(got[id(a)]), statistics.median(got[id(b)])))
            cpu_after = cpu_ns_per_step()
            drains = []
            for _ in range(3):
                await b.post_turns(args.drain)
                queued = (await b.kernel.inspect(AGENT)).extraction.queued
                t0 = time.perf_counter()
                report = await b.kernel.extract_pending(limit=1_000_000)
                seconds = time.perf_counter() - t0
                drains.append((queued, report.turns, seconds, dict(report.facts)))
        finally:
            await _close(a, args.dsn)
            await _close(b, args.dsn)
    _print(args, per_round, all_a, all_b, drains, (cpu_before, cpu_after))


def _print(
    args: argparse.Namespace,
    per_round: list[tuple[float, float]],
    all_a: list[float],
    all_b: list[float],
    drains: list[tuple[int, int, float, dict[str, int]]],
    cpu: tuple[float, float],
) -> None:
    table = Table(title=f"post_turn p50 ms, {args.decisions:,} decisions, {args.turns} turns/round")
    for column in ("round", "order", "A: no extractor", "B: FakeExtractor", "B/A"):
        table.add_column(column, justify="right")
    for r, (pa, pb) in enumerate(per_round, 1):
        order = "A B" if r % 2 == 1 else "B A"
        table.add_row(str(r), order, f"{pa:.2f}", f"{pb:.2f}", f"{pb / pa:.3f}")
    ma, mb = statistics.median(all_a), statistics.median(all_b)
    table.add_row("all", "", f"{ma:.2f}", f"{mb:.2f}", f"{mb / ma:.3f}")
    console.print(table)
    ratios = [pb / pa for pa, pb in per_round]
    console.print(
        f"B/A per round: {min(ratios):.3f}-{max(ratios):.3f} (bar: <= 1.20); "
        f"cpu ns/step before {cpu[0]:.1f}, after {cpu[1]:.1f}"
    )
    drain = Table(title="extraction queue drain (extract_pending, FakeExtractor, batch 32)")
    for column in ("queued turns", "extracted", "seconds", "turns/s", "facts"):
        drain.add_column(column, justify="right")
    for queued, done, seconds, facts in drains:
        drain.add_row(str(queued), str(done), f"{seconds:.2f}", f"{done / seconds:.0f}",
                      ", ".join(f"{k} {v}" for k, v in sorted(facts.items())))  # fmt: skip
    console.print(drain)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--decisions", type=int, default=10_000, help="existing decisions")
    parser.add_argument("--rounds", type=int, default=6, help="A/B rounds (alternating)")
    parser.add_argument("--turns", type=int, default=50, help="measured turns per round")
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--drain", type=int, default=300, help="exchanges queued per drain")
    parser.add_argument("--dsn", default=None, help="PostgreSQL URL (default: embedded)")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
