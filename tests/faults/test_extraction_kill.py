"""SIGKILL a process in the middle of draining the extraction queue — just before its Nth
statement or COMMIT, wherever that falls (the claim, the settle, the learn) — then drain
again from a fresh process: every queued turn's facts are learned, none twice, and the
queue ends empty. Real PostgreSQL, a real subprocess."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import func, select

from memory_kernel import MemoryKernel
from memory_kernel.models.enums import EventKind, MemoryKind
from memory_kernel.models.turns import TurnInput, TurnOutcome
from memory_kernel.storage.tables import extraction_queue, facts, memory_events
from memory_kernel.testing import FakeEmbedder, FakeExtractor, FrozenClock
from tests.conftest import QUIET, schema_config

ROOT = Path(__file__).resolve().parents[2]
SAID = [
    ("city", "Lisbon"), ("job", "pilot"), ("dog", "Rex"), ("car", "a red Volvo"),
    ("bank", "Monzo"), ("school", "Hill Park"), ("doctor", "Dr Amal"), ("gym", "Iron Works"),
    ("team", "Arsenal"), ("band", "Radiohead"),
]  # fmt: skip
EXCHANGES = len(SAID)
QUEUE: dict[str, object] = {"worker": False, "batch_size": 4}
#: Statements (and COMMITs) of a drain at which the child kills itself. A batch of four turns
#: here is 15: listing, claim (lock, read, lease: UPDATE, COMMIT at 9), then the unit that
#: deletes the rows (10), learns (reads, writes) and commits (15). The default run kills
#: before the lease, before the delete, mid-learn, before the COMMIT and in the second batch;
#: ``-m slow`` kills at every statement of two batches.
KILL_AT = (8, 10, 13, 15, 19)
EVERY = tuple(range(1, 31))

_CHILD = """
import asyncio, os, signal, sys
from sqlalchemy import event
from memory_kernel import MemoryKernel, MemoryKernelConfig
from memory_kernel.testing import FakeEmbedder, FakeExtractor

dsn, schema, kill_at = sys.argv[1], sys.argv[2], int(sys.argv[3])

async def main():
    config = MemoryKernelConfig.from_mapping({
        "storage": {"schema_name": schema, "index_worker": False},
        "consolidation": {"embed_worker": False},
        "extraction": {"worker": False, "batch_size": 4},
    })
    kernel = await MemoryKernel.open(
        dsn, config=config, embedder=FakeEmbedder(), extractor=FakeExtractor()
    )
    seen = 0
    def step(*_args):
        nonlocal seen
        seen += 1
        if seen == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
    engine = kernel.database.engine.sync_engine
    event.listen(engine, "before_cursor_execute", step)
    event.listen(engine, "commit", step)
    await kernel.extract_pending(limit=10_000)
    print("drained", flush=True)

asyncio.run(main())
"""


async def _queue_turns(kernel: MemoryKernel, agent: str) -> None:
    for i, (slot, value) in enumerate(SAID):
        ctx = await kernel.pre_turn(
            TurnInput(agent_id=agent, session_id="s1", message=f"My {slot} is {value}.")
        )
        await kernel.post_turn(ctx.turn, TurnOutcome(response_text=f"Noted item {i}."))


async def _state(kernel: MemoryKernel, agent: str) -> tuple[Counter[str], Counter[str], int]:
    """Facts per turn (any status), fact events by kind, queue rows left."""
    async with kernel.database.connection() as conn:
        per_turn = Counter(
            str(t)
            for t in (
                await conn.scalars(
                    select(facts.c.metadata["turn_id"].astext).where(facts.c.agent_id == agent)
                )
            ).all()
        )
        events = Counter(
            str(e)
            for e in (
                await conn.scalars(
                    select(memory_events.c.event).where(
                        memory_events.c.agent_id == agent,
                        memory_events.c.memory_kind == MemoryKind.FACT.value,
                    )
                )
            ).all()
        )
        left = await conn.scalar(
            select(func.count())
            .select_from(extraction_queue)
            .where(extraction_queue.c.agent_id == agent)
        )
    return per_turn, events, int(left or 0)


async def test_a_drain_killed_anywhere_loses_nothing_and_learns_nothing_twice(
    pg_dsn: str, drop_schema: str
) -> None:
    await _sweep(pg_dsn, drop_schema, KILL_AT)


@pytest.mark.slow
async def test_a_drain_killed_at_every_statement_loses_nothing(
    pg_dsn: str, drop_schema: str
) -> None:
    await _sweep(pg_dsn, drop_schema, EVERY)


async def _sweep(pg_dsn: str, drop_schema: str, points: tuple[int, ...]) -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    # The restarted drain runs after every lease the killed one took has run out.
    later = FrozenClock(datetime.now(UTC) + timedelta(days=1))
    config = schema_config(drop_schema, **{**QUIET, "extraction": QUEUE})
    for kill_at in points:
        agent = f"killed-at-{kill_at}"
        async with MemoryKernel.open(
            pg_dsn, config=config, clock=FrozenClock(start), embedder=FakeEmbedder(),
            extractor=FakeExtractor(),
        ) as kernel:  # fmt: skip
            await _queue_turns(kernel, agent)
        child = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-c", _CHILD, pg_dsn, drop_schema, str(kill_at)],
            cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert child.returncode == -signal.SIGKILL, (kill_at, child.stdout, child.stderr[-2000:])
        extractor = FakeExtractor()
        async with MemoryKernel.open(
            pg_dsn, config=config, clock=later, embedder=FakeEmbedder(), extractor=extractor
        ) as kernel:
            await kernel.extract_pending(limit=10_000)
            per_turn, events, left = await _state(kernel, agent)
        assert left == 0, kill_at
        assert len(per_turn) == EXCHANGES and set(per_turn.values()) == {1}, kill_at
        assert events[EventKind.LEARNED.value] == EXCHANGES, (kill_at, events)
        assert events[EventKind.REINFORCED.value] == 0, (kill_at, events)
