"""Event-loop stalls of one turn with a long message: how long ``pre_turn`` + ``post_turn``
(and the prefetch ``post_turn`` starts) keep every other task of the process waiting.

    python benchmarks/loop_lag.py                       # embedded server, 1 KiB-1 MiB
    python benchmarks/loop_lag.py --dsn postgresql://…  # your server
    python benchmarks/loop_lag.py --sizes 1048576 --repeat 5

A probe task sleeps 1 ms in a loop and records the longest gap between its wake-ups while
one turn runs (the turn's message and response both of the given size; the default
``HashingEmbedder``). Two texts: ``prose`` (a vocabulary of 5,000 words) and ``log`` (20
words repeated: every step that reads "until it has enough words" reads it all). Prints
the max stall per size, text and repeat — wall clock, and in brackets the CPU time the
loop's own thread spent in that gap (on a busy machine the wall figure also counts waiting
for a CPU) — and the machine's load.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import tempfile
import uuid
from pathlib import Path

from rich.console import Console
from rich.table import Table
from sqlalchemy import text

from memory_kernel import MemoryKernel, MemoryKernelConfig
from memory_kernel.models.turns import TurnInput, TurnOutcome

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the probe the tests share
from tests.loop_probe import max_stall

console = Console()
MIB = 1024 * 1024


def make_text(kind: str, size: int, seed: int = 7) -> str:
    """``size`` characters of ``kind`` text: ``prose`` or ``log``."""
    rng = random.Random(seed)
    if kind == "prose":
        letters = "abcdefghijklmnoprstuvwy"
        vocabulary = [
            "".join(rng.choice(letters) for _ in range(rng.randint(2, 9))) for _ in range(5000)
        ]
    else:
        vocabulary = [
            "deploy", "service", "billing", "retry", "timeout", "worker", "queue", "host",
            "region", "error", "warning", "started", "stopped", "request", "latency",
            "cache", "backup", "shard", "node", "restart",
        ]  # fmt: skip
    words: list[str] = []
    length = 0
    while length < size:
        word = rng.choice(vocabulary) + ("." if rng.random() < 0.08 else "")
        words.append(word)
        length += len(word) + 1
    return " ".join(words)[:size].strip() or "x"


async def one_turn_stall(kernel: MemoryKernel, message: str, response: str) -> tuple[float, float]:
    """Max stall (s; wall clock, loop CPU) of one pre_turn + post_turn of
    ``message``/``response``, the prefetch that post_turn starts included."""
    session = f"s-{uuid.uuid4().hex[:8]}"

    async def turn() -> None:
        ctx = await kernel.pre_turn(
            TurnInput(agent_id="lag", session_id=session, message=message, frame="decision")
        )
        await kernel.post_turn(ctx.turn, TurnOutcome(response_text=response))
        await kernel.context.prefetch.wait()

    return await max_stall(turn)


async def run(dsn: str | None, sizes: list[int], repeat: int) -> None:
    schema = f"bench_lag_{uuid.uuid4().hex[:8]}"
    config = MemoryKernelConfig.from_mapping(
        {"storage": {"schema_name": schema}, "consolidation": {"embed_worker": False}}
    )
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = None if dsn else Path(tmp) / "pg"
        async with MemoryKernel.open(dsn, config=config, data_dir=data_dir) as kernel:
            try:
                await one_turn_stall(kernel, "Shall we warm up?", "We'll warm up first.")
                table = Table(title="max event-loop stall of one turn, ms: wall clock (loop CPU)")
                table.add_column("message + response")
                for kind in ("prose", "log"):
                    table.add_column(kind, justify="right")
                for size in sizes:
                    row = [f"{size:,} chars each"]
                    for kind in ("prose", "log"):
                        body = make_text(kind, size)
                        stalls = [await one_turn_stall(kernel, body, body) for _ in range(repeat)]
                        row.append(
                            " / ".join(f"{w * 1000:.0f} ({c * 1000:.0f})" for w, c in stalls)
                        )
                    table.add_row(*row)
                console.print(table)
                console.print(f"load average: {os.getloadavg()}")
            finally:
                async with kernel.database.transaction() as conn:
                    await conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", default=os.environ.get("MEMORY_KERNEL_DSN"))
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024, 65_536, 262_144, MIB])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(run(args.dsn, args.sizes, args.repeat))


if __name__ == "__main__":
    main()
