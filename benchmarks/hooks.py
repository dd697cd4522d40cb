"""pre_turn + post_turn latency with 10k existing decisions, next to the raw asyncpg floor.

    python benchmarks/hooks.py                      # 10k decisions, 300 measured turns
    python benchmarks/hooks.py --decisions 50000 --turns 1000
    python benchmarks/hooks.py --dsn postgresql://… # your server instead of the embedded one
    python benchmarks/hooks.py --embedder hashing    # the lexical half alone (the old default)

What it measures, in one run on the same data:
- ``memory-kernel``: ``kernel.pre_turn`` then ``kernel.post_turn`` for a deliberating turn
  whose response is a real decision (episode start/reuse, dedup at start, layer 1, gate,
  dedup at finalize, episode update) — validation, embedding and SQLAlchemy included.
- ``raw asyncpg floor``: the very SQL statements that turn issued (captured from the
  engine), replayed right after it as prepared statements on one asyncpg connection, one
  transaction per hook, with the fresh ids of the turn remapped so the inserts are new rows.
The target is kernel p50/p99 ≤ 3x the floor.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import asyncpg
import numpy as np
from pgvector.asyncpg import register_vector
from rich.console import Console
from rich.table import Table
from sqlalchemy import event, text

from memory_kernel import MemoryKernel, MemoryKernelConfig
from memory_kernel.models.turns import TurnInput, TurnOutcome
from memory_kernel.storage.partitions import rebalance
from memory_kernel.storage.tables import decisions
from memory_kernel.testing import FakeEmbedder, FrozenClock

AGENT = "bench-agent"
console = Console()


@dataclass
class Captured:
    """Statements one hook issued, in order: (sql, params, executemany)."""

    statements: list[tuple[str, Any, bool]] = field(default_factory=list)

    def listener(self, _c: Any, _cur: Any, sql: str, params: Any, _ctx: Any, many: bool) -> None:
        self.statements.append((sql, params, many))


async def seed(kernel: MemoryKernel, count: int, clock: FrozenClock) -> None:
    """``count`` finalized decisions over 500 sessions and the last 30 days."""
    rng = np.random.default_rng(7)
    now = clock.now()
    for start in range(0, count, 1000):
        vectors = rng.normal(size=(min(1000, count - start), kernel.embedder.dim))
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        rows = []
        for n, vector in enumerate(vectors.astype(np.float32)):
            at = now - timedelta(seconds=int(rng.integers(0, 30 * 86400)))
            rows.append(
                {
                    "agent_id": AGENT,
                    "id": uuid.uuid4(),
                    "session_id": f"s-{(start + n) % 500}",
                    "description": f"Seeded decision {start + n}: prefer option {n % 7}.",
                    "confidence": 0.7,
                    "stakes": "medium",
                    "frame": "decision",
                    "active": True,
                    "finalized": True,
                    "embedding": vector,
                    "created_at": at,
                    "updated_at": at,
                }
            )
        async with kernel.database.transaction() as conn:
            await conn.execute(decisions.insert(), rows)
    await rebalance(kernel.database, now)
    async with kernel.database.transaction() as conn:
        await conn.execute(text("ANALYZE decisions"))


@dataclass
class Minted:
    """Ids the turn created — remapped on replay. Recorded as ``uuid.uuid4`` hands them out:
    an insert's parameters alone cannot tell a new id from an existing one (a statement that
    updates a reused episode and inserts its event carries both)."""

    ids: set[uuid.UUID] = field(default_factory=set)

    @contextmanager
    def watching(self) -> Iterator[None]:
        mint = uuid.uuid4

        def recorded() -> uuid.UUID:
            new = mint()
            self.ids.add(new)
            return new

        uuid.uuid4 = recorded
        try:
            yield
        finally:
            uuid.uuid4 = mint


def remap(row: Any, mapping: dict[uuid.UUID, uuid.UUID]) -> list[Any]:
    return [mapping.get(p, p) if isinstance(p, uuid.UUID) else p for p in row]


async def replay(
    driver: Any, prepared: dict[str, Any], captured: list[Captured], fresh: set[uuid.UUID]
) -> float:
    """Seconds to replay both hooks' statements (one transaction per hook)."""
    mapping = {old: uuid.uuid4() for old in fresh}
    started = time.perf_counter()
    for hook in captured:
        async with driver.transaction():
            for sql, params, many in hook.statements:
                if many:
                    await driver.executemany(sql, [remap(r, mapping) for r in params])
                    continue
                stmt = prepared.get(sql)
                if stmt is None:
                    stmt = prepared[sql] = await driver.prepare(sql)
                await stmt.fetch(*remap(params, mapping))
    return time.perf_counter() - started


def pct(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return statistics.median(ordered), ordered[
        min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))
    ]


async def raw_driver(kernel: MemoryKernel) -> Any:
    url = kernel.database.engine.url.set(drivername="postgresql")
    driver = await asyncpg.connect(
        url.render_as_string(hide_password=False),
        server_settings={"search_path": f'"{kernel.database.schema}", public'},
    )
    # The kernel binds vectors as numpy arrays; pgvector's codec sends them in binary.
    await register_vector(driver)
    return driver


def deliberating_turn(i: int, said: str = "") -> tuple[TurnInput, TurnOutcome]:
    """The measured turn ``i``: a question in a deliberating frame and a decided answer
    (``said``: more of the user's message after the question)."""
    turn = TurnInput(
        agent_id=AGENT,
        session_id=f"s-{i % 500}",
        message=f"Which queue should service {i} use?{said}",
        frame="decision",
    )
    outcome = TurnOutcome(
        response_text=f"Use the managed queue for service {i} rather than self-hosting"
        f" RabbitMQ, because shard {i % 13} needs no extra operations work."
    )
    return turn, outcome


async def measure(
    kernel: MemoryKernel, clock: FrozenClock, turns: int, warmup: int
) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {"pre": [], "post": [], "kernel": [], "floor": []}
    driver = await raw_driver(kernel)
    prepared: dict[str, Any] = {}
    pre, post = Captured(), Captured()
    engine = kernel.database.engine.sync_engine
    try:
        for i in range(warmup + turns):
            clock.advance(seconds=7)
            turn, outcome = deliberating_turn(i)
            pre.statements.clear()
            post.statements.clear()
            minted = Minted()
            with minted.watching():
                event.listen(engine, "before_cursor_execute", pre.listener)
                t0 = time.perf_counter()
                ctx = await kernel.pre_turn(turn)
                t1 = time.perf_counter()
                event.remove(engine, "before_cursor_execute", pre.listener)
                event.listen(engine, "before_cursor_execute", post.listener)
                t2 = time.perf_counter()
                await kernel.post_turn(ctx.turn, outcome)
                t3 = time.perf_counter()
                event.remove(engine, "before_cursor_execute", post.listener)
            floor = await replay(driver, prepared, [pre, post], minted.ids)
            if i >= warmup:
                times["pre"].append((t1 - t0) * 1000)
                times["post"].append((t3 - t2) * 1000)
                times["kernel"].append((t1 - t0 + t3 - t2) * 1000)
                times["floor"].append(floor * 1000)
    finally:
        await driver.close()
    return times


async def run(
    count: int, turns: int, warmup: int, dsn: str | None, embedder: str
) -> tuple[dict[str, list[float]], int]:
    schema = f"bench_hooks_{uuid.uuid4().hex[:8]}"
    config = MemoryKernelConfig.from_mapping({"storage": {"schema_name": schema}})
    clock = FrozenClock()
    with tempfile.TemporaryDirectory(prefix="mk-bench-") as tmp:
        async with MemoryKernel.open(
            dsn,
            config=config,
            clock=clock,
            data_dir=Path(tmp) / "pg",
            embedder=FakeEmbedder(384) if embedder == "hashing" else FakeEmbedder(),
        ) as kernel:
            started = time.perf_counter()
            await seed(kernel, count, clock)
            console.print(
                f"[dim]seeded {count:,} decisions in {time.perf_counter() - started:.1f}s[/]"
            )
            times = await measure(kernel, clock, turns, warmup)
            recorded = kernel.stats().recorded
            if dsn:
                async with kernel.database.transaction() as conn:
                    await conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
    return times, recorded


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--decisions", type=int, default=10_000, help="existing decisions")
    parser.add_argument("--turns", type=int, default=300, help="measured turns")
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--dsn", default=None, help="PostgreSQL URL (default: embedded)")
    parser.add_argument(
        "--embedder", choices=("default", "hashing"), default="default",
        help="the default HybridEmbedder, or the HashingEmbedder alone",
    )  # fmt: skip
    args = parser.parse_args()
    times, recorded = asyncio.run(
        run(args.decisions, args.turns, args.warmup, args.dsn, args.embedder)
    )
    table = Table(
        title=f"pre_turn + post_turn, {args.decisions:,} existing decisions, {args.turns} turns"
    )
    for column in ("what", "p50 ms", "p99 ms"):
        table.add_column(column, justify="left" if column == "what" else "right")
    labels = {
        "pre": "kernel pre_turn",
        "post": "kernel post_turn",
        "kernel": "kernel pre_turn + post_turn",
        "floor": "raw asyncpg, same statements (floor)",
    }
    for key, label in labels.items():
        p50, p99 = pct(times[key])
        table.add_row(label, f"{p50:.2f}", f"{p99:.2f}")
    console.print(table)
    k50, k99 = pct(times["kernel"])
    f50, f99 = pct(times["floor"])
    console.print(f"ratio kernel/floor: p50 {k50 / f50:.2f}x, p99 {k99 / f99:.2f}x (target <= 3x)")
    console.print(f"[dim]decisions recorded by the measured and warm-up turns: {recorded}[/]")


if __name__ == "__main__":
    main()
