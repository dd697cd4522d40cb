"""The event-loop stall probe shared by tests/test_loop_stall.py and benchmarks/loop_lag.py."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable


async def max_stall(work: Callable[[], Awaitable[object]]) -> tuple[float, float]:
    """The longest gap (s) between wake-ups of a task sleeping 1 ms while ``work`` runs, in
    wall-clock time and in CPU time of the event loop's thread (the part the loop itself
    spent computing; the rest is waiting for a CPU or for the interpreter)."""
    gaps: list[tuple[float, float]] = []
    done = asyncio.Event()

    async def probe() -> None:
        last, last_cpu = time.perf_counter(), time.thread_time()
        while not done.is_set():
            await asyncio.sleep(0.001)
            now, cpu = time.perf_counter(), time.thread_time()
            gaps.append((now - last, cpu - last_cpu))
            last, last_cpu = now, cpu

    task = asyncio.create_task(probe())
    await asyncio.sleep(0.01)
    try:
        await work()
    finally:
        done.set()
        await task
    return max((g[0] for g in gaps), default=0.0), max((g[1] for g in gaps), default=0.0)
