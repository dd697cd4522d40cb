"""How fast this machine's CPU is right now, printed next to the figures.

On a shared host the same code runs at very different speeds from one minute to the next
(another tenant's load shows up as a slower CPU, not in this machine's load average). A
fixed pure-Python loop, timed just before or after a benchmark, tells a reader which runs
can be compared: nanoseconds per iteration, lower is faster.
"""

from __future__ import annotations

import time

__all__ = ["cpu_ns_per_step"]


def cpu_ns_per_step(steps: int = 2_000_000) -> float:
    """Nanoseconds per iteration of a fixed loop (the best of three tries)."""
    best = float("inf")
    for _ in range(3):
        total, start = 0, time.perf_counter()
        for i in range(steps):
            total += i
        best = min(best, time.perf_counter() - start)
    return best / steps * 1e9
