"""Latency of episode start (dedup) and end (admission) with many existing episodes.

Seeds one agent with ``--episodes`` finished, admitted episodes (plus a few ongoing ones in
the dedup window), promotes it to its own HNSW partition as consolidation would, then
times ``start`` and ``end`` one call at a time with the default rule judge. Half of the
ends repeat a stored run's summary, so the judge stage (NOT / REPLACE / MERGE) is timed
too, not only the pre-filter's ADD.

    python benchmarks/episodes.py                    # embedded server in a temp dir
    python benchmarks/episodes.py --dsn postgresql://... --episodes 10000 --ops 300

Besides p50/p99 (timed as a caller sees them, nothing else measured meanwhile) it prints
where a call's time goes, from a second pass with timers: each round trip to the server
(timed around asyncpg's BEGIN, statement execution and COMMIT), the embedder, and the
client's own CPU (SQLAlchemy, pydantic, asyncio). The load average is printed next to the
figures: on a busy machine every round trip waits for a core, so compare against the
1-statement transaction of the same run rather than across runs. Last, it checks that the admission
search (``hnsw.ef_search`` lowered to ``ADMISSION_EF_SEARCH``) finds the same candidates
as an exact scan.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import tempfile
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from asyncpg.prepared_stmt import PreparedStatement
from asyncpg.transaction import Transaction
from machine import cpu_ns_per_step
from sqlalchemy import text

from memory_kernel import HashingEmbedder, MemoryKernel, MemoryKernelConfig
from memory_kernel.heart.episodes import admission_store
from memory_kernel.heart.episodes.ending import ADMISSION_EF_SEARCH
from memory_kernel.models.episodes import EpisodeInput
from memory_kernel.storage.indexer import index_staged
from memory_kernel.storage.partitions import rebalance
from memory_kernel.storage.tables import episodes
from memory_kernel.testing import FrozenClock

AGENT = "bench-agent"
OUTCOMES = ("success", "success", "failure", "partial")
_WORDS = [f"{a}{b}" for a in ("re", "de", "pro", "con", "sub", "tra", "ex", "in") for b in (
    "port", "ploy", "view", "load", "ject", "form", "pact", "tain", "verse", "scribe", "mit",
    "sign", "solve", "press", "cept", "duct", "tend", "vert", "fer", "pose")]  # fmt: skip

#: How a statement of start/end is named in the breakdown (first matching marker wins).
_STEPS = (
    ("COMMIT", "COMMIT (WAL flush)"),
    ("BEGIN", "BEGIN"),
    ("pg_advisory_xact_lock", "agent's lock (start or admission)"),
    ("hnsw.ef_search", "SET LOCAL ef_search (end)"),
    ("WITH e AS", "episode locked + admission top-k (one statement)"),
    ("SET indexed = true", "index worker batch (background, not in end)"),
    ("touched AS", "reuse episode + event (1 CTE)"),
    ("done AS", "complete + plan + events (1 CTE, row staged)"),
    ("INSERT INTO episodes", "insert episode + event (1 CTE)"),
    ("started_at >=", "dedup window read (btree)"),
    ("FOR UPDATE", "lock REPLACE/MERGE target (+ group head)"),
    ("tiers", "admission top-k search (HNSW + staged tiers, judge path)"),
)


def _one_word_changed(text_: str, rng: random.Random) -> str:
    words = text_.split()
    words[rng.randrange(len(words))] = rng.choice(_WORDS)
    return " ".join(words)


def summary(rng: random.Random) -> str:
    return " ".join(rng.choices(_WORDS, k=rng.randint(6, 12))) + f" task {rng.randint(0, 10**6)}"


async def seed(kernel: MemoryKernel, n: int, rng: random.Random, now: datetime) -> list[str]:
    """Insert ``n`` finished, admitted episodes in bulk; returns their summaries."""
    texts = [summary(rng) for _ in range(n)]
    embedder = HashingEmbedder(kernel.embedder.dim)
    for lo in range(0, n, 1000):
        chunk = texts[lo : lo + 1000]
        vectors = embedder.embed_sync(chunk)
        rows = [
            {
                "agent_id": AGENT,
                "id": uuid.uuid4(),
                "session_id": "seed",
                "summary": t,
                "status": "completed",
                "outcome": rng.choice(OUTCOMES),
                "admission": "active",
                "embedding": v,
                "references": [f"ref-{rng.randint(0, 50)}"],
                "started_at": now - timedelta(days=1),
                "ended_at": now - timedelta(hours=20),
                "created_at": now,
                "updated_at": now,
            }
            for t, v in zip(chunk, vectors, strict=True)
        ]
        async with kernel.database.transaction() as conn:
            await conn.execute(episodes.insert(), rows)
    for _ in range(20):  # a few ongoing episodes inside the dedup window
        await kernel.heart.episodes.start(
            EpisodeInput(agent_id=AGENT, session_id="live", summary=summary(rng))
        )
    return texts


class ServerCpu:
    """CPU seconds used so far by a local server's processes (Linux /proc), or ``None``.

    Unlike wall time this hardly moves with machine load: it is the server's share of a
    call's cost, next to the client's ``process_time``.
    """

    def __init__(self, data_dir: Path | None) -> None:
        self._pid: int | None = None
        pid_file = None if data_dir is None else data_dir / "postmaster.pid"
        if pid_file is not None and pid_file.exists() and Path("/proc").is_dir():
            self._pid = int(pid_file.read_text().split()[0])
        self._tick = os.sysconf("SC_CLK_TCK") if self._pid is not None else 1

    def seconds(self) -> float | None:
        if self._pid is None:
            return None
        ticks = 0
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:  # the process ended meanwhile
                continue
            pid, ppid = int(stat.parent.name), int(fields[1])
            if pid == self._pid:  # the postmaster, and the children it reaped
                ticks += sum(int(f) for f in fields[11:15])
            elif ppid == self._pid:
                ticks += int(fields[11]) + int(fields[12])
        return ticks / self._tick


def _ms(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return 1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class Breakdown:
    """Seconds per step of the call being timed (``phase``), summed over calls."""

    def __init__(self, server: ServerCpu) -> None:
        self.server = server
        self.phase: str | None = None
        self.spent: dict[tuple[str, str], float] = defaultdict(float)
        self.calls: Counter[tuple[str, str]] = Counter()

    def add(self, step: str, seconds: float) -> None:
        if self.phase is not None:
            self.spent[self.phase, step] += seconds
            self.calls[self.phase, step] += 1

    def timed(self, step: Callable[[Any, tuple[Any, ...]], str], fn: Any) -> Any:
        """``fn(obj, *args)`` timed under ``step(obj, args)``."""

        async def wrapper(obj: Any, *args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return await fn(obj, *args, **kwargs)
            finally:
                self.add(step(obj, args), time.perf_counter() - t0)

        return wrapper


def _step(query: str) -> str:
    for marker, name in _STEPS:
        if marker in query:
            return name
    return " ".join(query.split()[:4])


@contextmanager
def round_trip_timer(breakdown: Breakdown) -> Iterator[None]:
    """Time asyncpg's round trips (BEGIN, each statement, COMMIT) while the block runs."""
    patched: list[tuple[type[Any], str, Callable[[Any, tuple[Any, ...]], str]]] = [
        (Transaction, "start", lambda *_: "BEGIN"),
        (Transaction, "commit", lambda *_: "COMMIT (WAL flush)"),
        (PreparedStatement, "fetch", lambda s, _: _step(s.get_query())),
    ]
    originals = [(cls, name, getattr(cls, name)) for cls, name, _ in patched]
    for (cls, name, step), (_, _, fn) in zip(patched, originals, strict=True):
        setattr(cls, name, breakdown.timed(step, fn))
    try:
        yield
    finally:
        for cls, name, fn in originals:
            setattr(cls, name, fn)


CLIENT_CPU = "~client CPU (python; overlaps the above)"
SERVER_CPU = "~server CPU (all postgres processes)"


async def _timed(
    breakdown: Breakdown | None, phase: str, call: Awaitable[Any]
) -> tuple[Any, float]:
    if breakdown is None:
        t0 = time.perf_counter()
        result = await call
        return result, time.perf_counter() - t0
    s0 = breakdown.server.seconds()  # outside the timed window: reading /proc takes a while
    breakdown.phase = phase
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        result = await call
    finally:
        breakdown.phase = None
    c1, t1 = time.process_time(), time.perf_counter()
    breakdown.spent[phase, CLIENT_CPU] += c1 - c0
    breakdown.calls[phase, CLIENT_CPU] += 1
    s1 = breakdown.server.seconds()
    if s0 is not None and s1 is not None:
        breakdown.spent[phase, SERVER_CPU] += s1 - s0
        breakdown.calls[phase, SERVER_CPU] += 1
    return result, t1 - t0


async def round_trips(kernel: MemoryKernel, n: int) -> list[float]:
    """A transaction with one trivial statement: the floor every write pays (machine load
    shows here first)."""
    samples = []
    for _ in range(n):
        t0 = time.perf_counter()
        async with kernel.database.transaction() as conn:
            await conn.execute(text("SELECT 1"))
        samples.append(time.perf_counter() - t0)
    return samples


class Run:
    """One measured series of start+end pairs; ``breakdown`` is ``None`` for a plain pass
    (latency as a caller sees it, no timers around the driver)."""

    def __init__(self, breakdown: Breakdown | None) -> None:
        self.starts: list[float] = []
        self.ends: list[float] = []
        self.decisions: Counter[str] = Counter()
        self.breakdown = breakdown
        self.queries: list[str] = []


class TimedEmbedder:
    """The default embedder, timed into the breakdown of the call in progress."""

    def __init__(self, inner: HashingEmbedder) -> None:
        self.inner = inner
        self.breakdown: Breakdown | None = None

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dim(self) -> int:
        return self.inner.dim

    async def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        t0 = time.perf_counter()
        try:
            return await self.inner.embed(texts)
        finally:
            if self.breakdown is not None:
                self.breakdown.add("embed", time.perf_counter() - t0)


async def measure(
    kernel: MemoryKernel,
    embedder: TimedEmbedder,
    stored: list[str],
    ops: int,
    rng: random.Random,
    *,
    instrument: bool = False,
) -> Run:
    """``ops`` start+end pairs. Instrumented, every round trip is timed and the server's
    CPU read from /proc around each call: that costs time of its own, so the latency
    figures come from a plain pass and the breakdown from an instrumented one."""
    server = kernel.database.server
    cpu = ServerCpu(None if server is None else server.data_dir)
    run = Run(Breakdown(cpu) if instrument else None)
    embedder.breakdown = run.breakdown
    with nullcontext() if run.breakdown is None else round_trip_timer(run.breakdown):
        for i in range(ops):
            await _pair(kernel, run, i, rng.choice(stored) if i % 2 else summary(rng), rng)
    embedder.breakdown = None
    return run


async def _pair(kernel: MemoryKernel, run: Run, i: int, text_: str, rng: random.Random) -> None:
    """One start and its end; every other run repeats a stored task."""
    service = kernel.heart.episodes
    ep = EpisodeInput(agent_id=AGENT, session_id=f"s{i}", summary=text_)
    started, t_start = await _timed(run.breakdown, "start", service.start(ep))
    end = service.end(
        started.episode.id,
        agent_id=AGENT,
        outcome=rng.choice(OUTCOMES),
        references=[f"ref-{rng.randint(0, 50)}"],
    )
    ended, t_end = await _timed(run.breakdown, "end", end)
    run.starts.append(t_start)
    run.ends.append(t_end)
    run.queries.append(text_)
    run.decisions[f"{ended.decision.value} ({ended.decided_by})"] += 1


def report(run: Run, baseline: list[float]) -> None:
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"load average (1, 5, 15 min): {load}; CPU now: {cpu_ns_per_step():.0f} ns/step")
    print(f"{'operation':<28}{'n':>6}{'p50 ms':>10}{'p99 ms':>10}{'mean ms':>10}")
    rows = (
        ("start (dedup)", run.starts),
        ("end (admission, rules)", run.ends),
        ("baseline: 1-statement tx", baseline),
    )
    for name, samples in rows:
        mean = 1000 * statistics.fmean(samples)
        print(
            f"{name:<28}{len(samples):>6}{_ms(samples, 0.5):>10.2f}{_ms(samples, 0.99):>10.2f}"
            f"{mean:>10.2f}"
        )
    print("decisions: " + ", ".join(f"{k} {v}" for k, v in sorted(run.decisions.items())))


def report_breakdown(run: Run) -> None:
    b, ops = run.breakdown, len(run.ends)
    assert b is not None  # an instrumented run
    print(
        f"\nwhere the time goes (a second, instrumented pass of {ops} pairs: start p50 "
        f"{_ms(run.starts, 0.5):.2f}, end p50 {_ms(run.ends, 0.5):.2f} ms with the timers; "
        "mean ms per call, round trips timed around asyncpg):"
    )
    print(f"{'call':<7}{'step':<50}{'per call':>10}{'ms':>9}")
    for phase, total in (("start", run.starts), ("end", run.ends)):
        steps = sorted((k for k in b.spent if k[0] == phase), key=lambda k: -b.spent[k])
        steps.sort(key=lambda k: k[1].startswith("~"))  # the overlapping CPU figures last
        accounted = 0.0
        for key in steps:
            ms = 1000 * b.spent[key] / ops
            if key[1].startswith("~"):
                if key[1] == CLIENT_CPU:
                    rest = 1000 * statistics.fmean(total) - accounted
                    print(f"{phase:<7}{'rest: client between round trips':<50}{'':>10}{rest:>9.3f}")
            else:
                accounted += ms
            print(f"{phase:<7}{key[1]:<50}{b.calls[key] / ops:>10.2f}{ms:>9.3f}")


async def completeness(kernel: MemoryKernel, queries: list[str]) -> tuple[int, int, int]:
    """(candidate sets equal to the exact scan's, queries, candidates found exactly)."""
    heart = kernel.config.heart
    vectors = HashingEmbedder(kernel.embedder.dim).embed_sync(queries)
    same = total = 0
    for vector in vectors:
        found = []
        for exact in (False, True):
            async with kernel.database.transaction() as conn:
                await admission_store.set_ef_search(conn, ADMISSION_EF_SEARCH)
                if exact:  # no index: a sequential scan and a sort, the exact answer
                    await conn.execute(text("SET LOCAL enable_indexscan = off"))
                cands = await admission_store.candidates(
                    conn,
                    agent_id=AGENT,
                    vector=vector,
                    exclude=uuid.uuid4(),
                    k=heart.admission_candidates,
                    min_similarity=heart.admission_similarity,
                )
            found.append([c.id for c, _ in cands])
        same += found[0] == found[1]
        total += len(found[1])
    return same, len(queries), total


async def run(args: argparse.Namespace) -> None:
    rng = random.Random(args.seed)
    clock = FrozenClock(datetime(2026, 1, 1, 12, tzinfo=UTC))
    schema = f"bench_{uuid.uuid4().hex[:8]}"
    storage: dict[str, object] = {"schema_name": schema}
    if args.hnsw_m is not None:
        storage["hnsw_m"] = args.hnsw_m
    if args.hnsw_ef_construction is not None:
        storage["hnsw_ef_construction"] = args.hnsw_ef_construction
    config = MemoryKernelConfig.from_mapping({"storage": storage})
    with tempfile.TemporaryDirectory(prefix="mk-bench-") as tmp:
        data_dir = None if args.dsn else Path(tmp) / "pg"
        embedder = TimedEmbedder(HashingEmbedder())
        async with MemoryKernel.open(
            args.dsn, config=config, clock=clock, data_dir=data_dir, embedder=embedder
        ) as kernel:
            t0 = time.perf_counter()
            stored = await seed(kernel, args.episodes, rng, clock.now())
            promoted = [] if args.no_rebalance else await rebalance(kernel.database, clock.now())
            own = any(p.table == "episodes" for p in promoted)
            print(f"seeded {args.episodes} episodes in {time.perf_counter() - t0:.1f}s; ", end="")
            cfg = config.storage
            print(f"own HNSW partition: {own} (m={cfg.hnsw_m}, ", end="")
            print(f"ef_construction={cfg.hnsw_ef_construction})")
            await measure(kernel, embedder, stored, args.warmup, rng)  # warm caches, pool
            # Each pass starts as a burst after a pause would: the rows earlier calls staged
            # already indexed (the index worker's job between turns).
            await index_staged(kernel.database, batch=cfg.index_batch)
            measured = await measure(kernel, embedder, stored, args.ops, rng)
            report(measured, await round_trips(kernel, args.ops))
            await index_staged(kernel.database, batch=cfg.index_batch)
            timed = await measure(kernel, embedder, stored, args.ops, rng, instrument=True)
            report_breakdown(timed)
            same, n, found = await completeness(kernel, measured.queries)
            print(
                f"\nadmission search at ef_search {ADMISSION_EF_SEARCH} vs exact scan: same "
                f"candidates for {same}/{n} end queries ({found} candidates >= threshold)"
            )
            # Near-duplicates (one word of a stored run changed): what admission must find.
            near = [_one_word_changed(rng.choice(stored), rng) for _ in range(args.ops)]
            same, n, found = await completeness(kernel, near)
            print(f"  and for {n} near-duplicates of stored runs: {same}/{n} ({found} candidates)")
            if args.dsn:
                async with kernel.database.transaction() as conn:
                    await conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))


def main() -> None:
    parser = argparse.ArgumentParser(description="episode start/end latency")
    parser.add_argument("--dsn", help="PostgreSQL + pgvector DSN (default: embedded server)")
    parser.add_argument("--episodes", type=int, default=10_000, help="existing episodes")
    parser.add_argument("--ops", type=int, default=300, help="timed start+end pairs")
    parser.add_argument("--warmup", type=int, default=30, help="untimed pairs first")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--no-rebalance", action="store_true", help="stay in the shared partition")
    # The index worker pays an HNSW insert per admitted episode in the background: these
    # show what the index parameters of the agent's partition (StorageConfig) cost and save.
    parser.add_argument("--hnsw-m", type=int, help="StorageConfig.hnsw_m of the partition")
    parser.add_argument("--hnsw-ef-construction", type=int, help="... and its ef_construction")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
