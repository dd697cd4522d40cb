"""What storing the conversation costs: bytes per 1,000 turns, table and each index.

    python benchmarks/turns_storage.py --dsn postgresql://...   # or the embedded server
    python benchmarks/turns_storage.py --turns 4000 --data path/to/conversations.jsonl

Stores ``--turns`` turns (user messages and assistant replies, in order) of the authored
conversations set through ``kernel.heart.turns.record`` — the call ``post_turn`` makes —
with the default HashingEmbedder (384 dimensions), for one agent in the shared partition,
then for a second agent promoted to a partition of its own (its HNSW index built, as
``consolidate`` does past ``dedicated_partition_rows``). Prints ``pg_total_relation_size``
of each partition and ``pg_relation_size`` of each of its indexes, per 1,000 turns.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import uuid
from pathlib import Path

from rich.console import Console
from rich.table import Table
from sqlalchemy import text

from memory_kernel import MemoryKernel, MemoryKernelConfig
from memory_kernel.heart.turns.policy import Said
from memory_kernel.storage.partitions import partition_name, promote_agent
from memory_kernel.testing import FrozenClock

DEFAULT_DATA = "/work/shared/eval/dev/conversations/conversations_dev.jsonl"
console = Console()


def load_turns(path: Path, count: int) -> list[tuple[str, str]]:
    said = []
    for line in path.read_text(encoding="utf-8").splitlines():
        for session in json.loads(line)["sessions"]:
            said += [(t["role"], t["content"]) for t in session["turns"]]
    return [said[i % len(said)] for i in range(count)]


async def store(kernel: MemoryKernel, agent: str, turns: list[tuple[str, str]]) -> None:
    clock = kernel.clock
    for start in range(0, len(turns), 2):
        pair = turns[start : start + 2]
        said = [Said(role, content, clock.now(), n) for n, (role, content) in enumerate(pair)]
        vectors = list(await kernel.embedder.embed([s.content for s in said]))
        await kernel.heart.turns.record(
            said, vectors, agent_id=agent, session_id=f"s{start // 16}", episode_id=uuid.uuid4()
        )


async def sizes(kernel: MemoryKernel, partition: str) -> list[tuple[str, int]]:
    async with kernel.database.connection() as conn:
        total = await conn.scalar(text("SELECT pg_total_relation_size(:p)"), {"p": partition})
        heap = await conn.scalar(text("SELECT pg_table_size(:p)"), {"p": partition})
        rows = await conn.execute(
            text(
                "SELECT indexrelid::regclass::text AS name, pg_relation_size(indexrelid) AS size"
                " FROM pg_index WHERE indrelid = CAST(:p AS regclass) ORDER BY 1"
            ),
            {"p": partition},
        )
        found = [("total (table + TOAST + indexes)", int(total)), ("table + TOAST", int(heap))]
        return found + [(str(r.name), int(r.size)) for r in rows]


async def run(dsn: str | None, count: int, data: Path) -> None:
    schema = f"bench_turns_{uuid.uuid4().hex[:8]}"
    config = MemoryKernelConfig.from_mapping(
        {"storage": {"schema_name": schema, "index_worker": False}}
    )
    turns = load_turns(data, count)
    chars = sum(len(c) for _, c in turns)
    with tempfile.TemporaryDirectory(prefix="mk-bench-") as tmp:
        async with MemoryKernel.open(
            dsn, config=config, clock=FrozenClock(), data_dir=Path(tmp) / "pg"
        ) as kernel:
            # The shared partition holds only this agent's turns here: its size is theirs.
            await store(kernel, "shared-agent", turns)
            shared = await sizes(kernel, "turns_default")
            await store(kernel, "own-agent", turns)
            async with kernel.database.transaction() as conn:
                await promote_agent(
                    conn, "turns", "own-agent", kernel.database.config, kernel.clock.now()
                )
            own = await sizes(kernel, partition_name("turns", "own-agent"))
            if dsn:
                async with kernel.database.transaction() as conn:
                    await conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
    per = 1000 / count
    console.print(
        f"{count:,} turns, {chars / count:.0f} characters each on average "
        f"({data.name}), HashingEmbedder 384-d"
    )
    for title, found in (("shared partition", shared), ("own partition (HNSW)", own)):
        table = Table(title=f"{title}: bytes per 1,000 turns")
        table.add_column("relation")
        table.add_column("KB per 1k turns", justify="right")
        for name, size in found:
            table.add_row(name.split(".")[-1], f"{size * per / 1024:,.0f}")
        console.print(table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=4000)
    parser.add_argument("--data", type=Path, default=Path(DEFAULT_DATA))
    parser.add_argument("--dsn", default=None, help="PostgreSQL URL (default: embedded)")
    args = parser.parse_args()
    asyncio.run(run(args.dsn, args.turns, args.data))


if __name__ == "__main__":
    main()
