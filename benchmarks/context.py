"""Context engine speed: the relevance pipeline, a greeting turn, and a full recall turn at
100k memories next to the raw asyncpg floor of the same queries.

    python benchmarks/context.py                        # 100k memories (a few minutes)
    python benchmarks/context.py --memories 20000       # quick run
    python benchmarks/context.py --dsn postgresql://…   # your server instead of the embedded one

What it measures:
- ``relevance pipeline``: ``RelevancePipeline.compute`` with the packaged config, per call
  (``perf_counter_ns`` over many calls), for a greeting, a plain RESPOND turn (the node cap
  at work) and an urgent CLARIFY turn (urgency, soft recovery, safety).
- ``greeting build``: ``ContextEngine.build("Hey!", mode=ACKNOWLEDGE)`` — no I/O at all.
- ``full build``: ``ContextEngine.build`` for a question in RESPOND mode over one agent with
  ``--memories`` facts+episodes (+1% decisions) in its own HNSW partitions, 20 of the facts
  preferences: one query embedding, the recall nodes concurrently (vector + full-text
  each) and ``user_traits`` (its preferences and their newer neighbours), ranking, assembly.
- ``raw asyncpg floor``: the very statements the build sent (captured), replayed on three
  raw asyncpg connections with the same concurrency — the database's share alone.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import tempfile
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import numpy as np
from pgvector.asyncpg import register_vector
from rich.console import Console
from rich.table import Table
from sqlalchemy import event

from memory_kernel import HashingEmbedder, MemoryKernel, MemoryKernelConfig
from memory_kernel.context.engine import ContextEngine
from memory_kernel.context.relevance import RelevancePipeline
from memory_kernel.models.context import ContextRequest
from memory_kernel.runtime import Runtime
from memory_kernel.storage.partitions import rebalance
from memory_kernel.testing import FrozenClock

NOW = datetime(2026, 1, 1, tzinfo=UTC)
AGENT = "bench-agent"
PREFERENCES = 20  # of the facts: a user with this many preferences
console = Console()


def pct(values: Sequence[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return statistics.median(ordered), ordered[
        min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))
    ]


def pipeline_us(calls: int) -> list[tuple[str, float]]:
    pipeline = RelevancePipeline.load(strict=True)
    cases: list[tuple[str, dict[str, Any]]] = [
        ("greeting (ACKNOWLEDGE)", {"mode": "ACKNOWLEDGE", "signals": {"greeting_pattern": True}}),
        ("RESPOND, cap enforced", {"mode": "RESPOND", "signals": {"working_memory_turns": 3}}),
        (
            "CLARIFY, urgent + recovery",
            {
                "mode": "CLARIFY",
                "signals": {"context_warmth": 0.8, "working_memory_turns": 3},
                "classification": {"urgency": "high"},
                "token_budget_remaining": 3000,
            },
        ),
    ]
    out = []
    for name, kwargs in cases:
        runs = []
        for _ in range(5):
            start = time.perf_counter_ns()
            for _ in range(calls):
                pipeline.compute(**kwargs)
            runs.append((time.perf_counter_ns() - start) / calls / 1000)
        out.append((name, min(runs)))  # best of 5: the machine's noise is not the pipeline's
    return out


def vocabulary(rng: np.random.Generator, size: int = 6000) -> list[str]:
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    return ["".join(rng.choice(letters, size=rng.integers(3, 10))) for _ in range(size)]


def sentences(rng: np.random.Generator, words: list[str], n: int) -> list[str]:
    # Zipf-like word frequencies: a few very common words, a long tail of rare ones.
    weights = 1.0 / np.arange(1, len(words) + 1)
    weights /= weights.sum()
    picks = rng.choice(len(words), size=(n, 12), p=weights)
    return [" ".join(words[i] for i in row[: 6 + row[0] % 7]) for row in picks]


async def seed(kernel: MemoryKernel, memories: int, rng: np.random.Generator) -> list[str]:
    words = vocabulary(rng)
    texts = sentences(rng, words, memories)
    vectors = await kernel.embedder.embed(texts)
    driver = await raw(kernel)
    n_facts, n_decisions = int(memories * 0.6), memories // 100
    when = [NOW - timedelta(minutes=i) for i in range(memories)]
    fact_cols = ["agent_id", "id", "content", "confidence", "status", "embedding"]
    fact_cols += ["last_evidence_at", "valid_from", "created_at", "updated_at", "category"]
    facts = [
        (
            AGENT,
            uuid.uuid4(),
            texts[i],
            0.8,
            "active",
            vectors[i],
            when[i],
            when[i],
            when[i],
            when[i],
            "preference" if i % (n_facts // PREFERENCES) == 0 else None,  # user_traits
        )
        for i in range(n_facts)
    ]
    ep_cols = ["agent_id", "id", "session_id", "summary", "status", "admission", "embedding"]
    ep_cols += ["started_at", "ended_at", "created_at", "updated_at"]
    episodes = [
        (AGENT, uuid.uuid4(), "s", texts[i], "completed", "active", vectors[i], *[when[i]] * 4)
        for i in range(n_facts, memories)
    ]
    dec_cols = ["agent_id", "id", "session_id", "description", "confidence", "stakes"]
    dec_cols += ["embedding", "created_at", "updated_at"]
    decisions = [
        (AGENT, uuid.uuid4(), "s", texts[i], 0.8, "medium", vectors[i], when[i], when[i])
        for i in range(n_decisions)
    ]
    async with driver.transaction():
        await driver.copy_records_to_table("facts", records=facts, columns=fact_cols)
        await driver.copy_records_to_table("episodes", records=episodes, columns=ep_cols)
        await driver.copy_records_to_table("decisions", records=decisions, columns=dec_cols)
    for table in ("facts", "episodes", "decisions"):
        await driver.execute(f"ANALYZE {table}")
    await driver.close()
    # Questions reuse a memory's rarer words, as a user asking about it would.
    return [" ".join(t.split()[-4:]) + "?" for t in rng.choice(texts, size=200)]


async def raw(kernel: MemoryKernel) -> Any:
    url = kernel.database.engine.url.set(drivername="postgresql")
    driver = await asyncpg.connect(
        url.render_as_string(hide_password=False),
        server_settings={"search_path": f"{kernel.database.schema}, public"},
    )
    await register_vector(driver)
    return driver


class Capture:
    """The statements the engine sends, with their parameters, grouped per connection."""

    def __init__(self, kernel: MemoryKernel) -> None:
        self.by_connection: dict[int, list[tuple[str, tuple[Any, ...]]]] = {}
        self._target = kernel.database.engine.sync_engine

    def __enter__(self) -> Capture:
        event.listen(self._target, "before_cursor_execute", self._record)
        return self

    def __exit__(self, *_: object) -> None:
        event.remove(self._target, "before_cursor_execute", self._record)

    def _record(self, conn: Any, _cursor: Any, statement: str, params: Any, *_: Any) -> None:
        self.by_connection.setdefault(id(conn), []).append((statement, tuple(params or ())))


def to_native(value: Any) -> Any:
    # The pool binds vectors as text ('[0.1,...]'); the raw connection uses the binary codec.
    if isinstance(value, str) and value.startswith("[") and value.endswith("]"):
        try:
            return np.array([float(x) for x in value[1:-1].split(",")], dtype=np.float32)
        except ValueError:
            return value
    return value


async def floor(drivers: list[Any], groups: list[list[tuple[str, tuple[Any, ...]]]]) -> float:
    """Replay each connection's statements on its own raw connection, concurrently."""

    async def replay(driver: Any, statements: list[tuple[str, tuple[Any, ...]]]) -> None:
        for sql, params in statements:
            await driver.fetch(
                re.sub(r"::VECTOR\(\d+\)|::VECTOR", "", sql), *map(to_native, params)
            )

    start = time.perf_counter()
    await asyncio.gather(*(replay(d, g) for d, g in zip(drivers, groups, strict=False)))
    return (time.perf_counter() - start) * 1000


async def turn_times(
    kernel: MemoryKernel, questions: list[str], repeats: int
) -> dict[str, tuple[float, float]]:
    runtime = Runtime(
        db=kernel.database, embedder=kernel.embedder, clock=kernel.clock, config=kernel.config
    )
    engine = ContextEngine(runtime)
    greeting = ContextRequest(agent_id=AGENT, message="Hey!", mode="ACKNOWLEDGE")
    greet: list[float] = []
    for _ in range(repeats * 5):
        start = time.perf_counter()
        await engine.build(greeting)
        greet.append((time.perf_counter() - start) * 1000)
    drivers = [await raw(kernel) for _ in range(3)]
    full: list[float] = []
    base: list[float] = []
    for n, question in enumerate(questions[: repeats + 10]):
        request = ContextRequest(agent_id=AGENT, message=question, recent_messages=["user: hi"])
        with Capture(kernel) as capture:
            start = time.perf_counter()
            await engine.build(request)
            elapsed = (time.perf_counter() - start) * 1000
        raw_ms = await floor(drivers, list(capture.by_connection.values()))
        if n >= 10:  # warm-up: pool connections, plans, caches
            full.append(elapsed)
            base.append(raw_ms)
    for driver in drivers:
        await driver.close()
    await engine.close()
    return {"greeting": pct(greet), "full": pct(full), "floor": pct(base)}


async def main(memories: int, repeats: int, calls: int, dsn: str | None) -> None:
    pipeline = pipeline_us(calls)
    schema = f"bench_context_{memories}"
    config = MemoryKernelConfig.from_mapping({"storage": {"schema_name": schema}})
    with tempfile.TemporaryDirectory(prefix="mk-bench-") as tmp:
        async with MemoryKernel.open(
            dsn,
            config=config,
            embedder=HashingEmbedder(),
            clock=FrozenClock(NOW),
            data_dir=Path(tmp) / "pg",
        ) as kernel:
            started = time.perf_counter()
            questions = await seed(kernel, memories, np.random.default_rng(7))
            promoted = await rebalance(kernel.database, NOW)
            console.print(
                f"[dim]{memories:,} memories seeded, {len(promoted)} partitions promoted in "
                f"{time.perf_counter() - started:.0f}s[/]"
            )
            times = await turn_times(kernel, questions, repeats)
            if dsn:
                async with kernel.database.transaction() as conn:
                    from sqlalchemy import text

                    await conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
    show(pipeline, times, memories)


def show(
    pipeline: list[tuple[str, float]], times: dict[str, tuple[float, float]], memories: int
) -> None:
    table = Table(title="relevance pipeline (pure, per call)")
    table.add_column("case")
    table.add_column("µs", justify="right")
    table.add_column("target")
    for name, micros in pipeline:
        table.add_row(name, f"{micros:.1f}", "<= 50")
    console.print(table)
    turns = Table(title=f"context build, one agent with {memories:,} memories")
    for column in ("what", "p50 ms", "p99 ms", "note"):
        turns.add_column(column, justify="right" if "ms" in column else "left")
    (g50, g99), (f50, f99), (b50, b99) = times["greeting"], times["full"], times["floor"]
    turns.add_row("greeting build (ACKNOWLEDGE)", f"{g50:.3f}", f"{g99:.3f}", "no I/O")
    turns.add_row(
        "full build (RESPOND)", f"{f50:.2f}", f"{f99:.2f}", f"{f50 / b50:.2f}× floor (target <= 2)"
    )
    turns.add_row("raw asyncpg floor, same queries", f"{b50:.2f}", f"{b99:.2f}", "3 connections")
    console.print(turns)
    # Other processes inflate every figure: the load says how much to trust them (ratios to
    # the floor, taken in the same run, suffer least).
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    console.print(f"load average (1, 5, 15 min): {load} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=100, help="measured turns")
    parser.add_argument("--calls", type=int, default=20_000, help="pipeline calls per case")
    parser.add_argument("--dsn", default=None)
    args = parser.parse_args()
    asyncio.run(main(args.memories, args.repeats, args.calls, args.dsn))
