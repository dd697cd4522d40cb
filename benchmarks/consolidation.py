"""Consolidation of one big agent: time, peak memory and the precision/recall of planted merges.

    python benchmarks/consolidation.py                          # 10k, 50k and 100k facts
    python benchmarks/consolidation.py --sizes 10000            # quick run
    python benchmarks/consolidation.py --dsn postgresql://...   # your server
    python benchmarks/consolidation.py --judge                  # with a judge (keeps both)

For each size it seeds one agent (COPY, vectors from the default HashingEmbedder) with:
- background facts, each a distinct statement;
- planted duplicate clusters (2-4 rewordings of one statement: case, punctuation, a
  function word) — these should be merged;
- planted contradictions (the same statement with "never") — flagged, never merged;
- planted value changes ("for 3 hours" / "for 5 hours") — never merged;
with confidences in [0.65, 0.95] and last evidence spread over 90 days (so decay and
deprecation have work too). Then it promotes the agent to its own HNSW partition
(``rebalance``, timed apart) and runs ``consolidate`` in a child process, whose peak RSS
is the memory figure. ``--judge`` opens it with a judge that keeps every ambiguous case
apart, instantly: the cost of the judge bands' wider candidate search and classification
(``judge_restatement_probability``, ``judge_update_probability``), not of a model. Targets
(issue 7): 100k <= 60 s on 2 cores, time(100k)/time(50k)
<= 2.3, peak RSS <= 500 MB, planted-merge precision >= 0.95. The 1-minute load average
is printed beside each size: figures taken on a busy machine are inflated.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import asyncpg
import numpy as np
from pgvector.asyncpg import register_vector
from rich.console import Console
from rich.table import Table
from sqlalchemy import select, text

from memory_kernel import MemoryKernel, MemoryKernelConfig
from memory_kernel.judges.base import Judge
from memory_kernel.models.consolidation import ConsolidationAction, ConsolidationProgress
from memory_kernel.storage.partitions import rebalance
from memory_kernel.storage.tables import facts
from memory_kernel.testing import FakeEmbedder, FrozenClock

AGENT = "bench-agent"
NOW = datetime(2026, 6, 1, tzinfo=UTC)
console = Console(width=150)

_VERBS = (
    "uses", "calls", "stores", "owns", "reads", "writes", "builds", "ships", "tracks", "moves",
    "serves", "sends", "checks", "loads", "syncs", "hosts", "signs", "scans", "backs", "routes",
    "caches", "mirrors", "indexes", "exports", "imports",
)  # fmt: skip
_SYLLABLES = (
    "ka", "lo", "mi", "ne", "ru", "ta", "vo", "zi", "pe", "qu",
    "sa", "do", "fi", "gu", "ha", "je", "xo", "wy", "be", "ci",
)  # fmt: skip


def _vocabulary(rng: np.random.Generator, n: int) -> list[str]:
    words: set[str] = set()
    while len(words) < n:
        parts = rng.choice(_SYLLABLES, size=int(rng.integers(3, 5)))
        words.add("".join(parts))
    return sorted(words)


@dataclass
class Seed:
    """What was planted: rows to COPY and the ground truth."""

    cold: bool = False
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    clusters: list[list[uuid.UUID]] = field(default_factory=list)  # should merge
    contradictions: list[tuple[uuid.UUID, uuid.UUID]] = field(default_factory=list)
    value_changes: list[tuple[uuid.UUID, uuid.UUID]] = field(default_factory=list)


def _statement(rng: np.random.Generator, vocab: list[str]) -> tuple[str, str, str]:
    """(subject, verb, rest) of a distinct statement."""
    s, o, p, q = (vocab[int(i)] for i in rng.integers(0, len(vocab), size=4))
    return s.capitalize(), str(rng.choice(_VERBS)), f"{o} at {p} for {q}"


def _add(seed: Seed, rng: np.random.Generator, content: str) -> uuid.UUID:
    fact_id = uuid.uuid4()
    low = rng.random() < 0.02  # some facts near the end of their life: deprecation work
    confidence = float(rng.uniform(0.25, 0.35) if low else rng.uniform(0.65, 0.95))
    last = NOW - timedelta(days=float(rng.uniform(0, 90)))
    # Steady state: the store was consolidated last night (the decay clock stands there);
    # --cold: never consolidated, every fact decays since its last evidence.
    changed = last if seed.cold else max(last, NOW - timedelta(days=1))
    seed.rows.append((AGENT, fact_id, content, confidence, "active", last, last, last, changed))
    seed.texts.append(content)
    return fact_id


def plant(n: int, rng: np.random.Generator, *, cold: bool = False) -> Seed:
    vocab = _vocabulary(rng, 4000)
    seed = Seed(cold=cold)
    rewordings = ("{s} {v} {r}", "{s} {v} {r}.", "Currently {s} {v} {r}.", "{s} also {v} {r}")
    while len(seed.rows) < n:
        s, v, r = _statement(rng, vocab)
        roll = rng.random()
        if roll < 0.05:  # a duplicate cluster of 2-4 rewordings
            size = int(rng.integers(2, 5))
            forms = rng.choice(len(rewordings), size=size, replace=False)
            seed.clusters.append(
                [_add(seed, rng, rewordings[int(f)].format(s=s, v=v, r=r)) for f in forms]
            )
        elif roll < 0.06:
            a = _add(seed, rng, f"{s} {v} {r}.")
            seed.contradictions.append((a, _add(seed, rng, f"{s} never {v} {r}.")))
        elif roll < 0.07:
            hours = rng.choice(np.arange(2, 48), size=2, replace=False)
            a = _add(seed, rng, f"{s} {v} {r} for {hours[0]} hours.")
            seed.value_changes.append((a, _add(seed, rng, f"{s} {v} {r} for {hours[1]} hours.")))
        else:
            _add(seed, rng, f"{s} {v} {r}.")
    return seed


async def load(dsn: str, schema: str, seed: Seed) -> None:
    vectors = await FakeEmbedder().embed(seed.texts)
    driver = await asyncpg.connect(dsn, server_settings={"search_path": f"{schema}, public"})
    await register_vector(driver)
    columns = ["agent_id", "id", "content", "confidence", "status", "last_evidence_at"]
    columns += ["valid_from", "created_at", "updated_at", "embedding"]
    records = [(*row, vec) for row, vec in zip(seed.rows, vectors, strict=True)]
    await driver.copy_records_to_table("facts", records=records, columns=columns)
    await driver.execute("ANALYZE facts")
    await driver.close()


def peak_rss_mb() -> float:
    """This process's peak resident memory. ``VmHWM`` belongs to the process image, so a
    child started from the big seeding process does not inherit its peak (``ru_maxrss``
    does, across exec, on Linux)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def score(seed: Seed, merged: dict[uuid.UUID, uuid.UUID]) -> tuple[float, float, int]:
    """Precision and recall of merges against the planted clusters; merges across a planted
    contradiction or value change (never allowed)."""
    cluster_of = {m: n for n, members in enumerate(seed.clusters) for m in members}
    right = sum(
        1 for a, b in merged.items() if a in cluster_of and cluster_of.get(b) == cluster_of[a]
    )
    wanted = sum(len(c) - 1 for c in seed.clusters)
    forbidden = {frozenset(p) for p in [*seed.contradictions, *seed.value_changes]}
    wrong = sum(1 for a, b in merged.items() if frozenset((a, b)) in forbidden)
    precision = right / len(merged) if merged else 1.0
    return precision, right / wanted if wanted else 1.0, wrong


class KeepBoth:
    """A judge that answers at once: every case apart, every episode admitted."""

    name = "keep-both"

    async def admit(self, requests: Sequence[Any]) -> list[dict[str, str]]:
        return [{"decision": "ADD", "reason": "benchmark"} for _ in requests]

    async def resolve(self, requests: Sequence[Any]) -> list[dict[str, str]]:
        return [{"decision": "keep_both", "reason": "benchmark"} for _ in requests]


async def consolidate_child(dsn: str, schema: str, *, judge: bool) -> None:
    """Run in the child process: consolidate and print the report as JSON."""
    config = MemoryKernelConfig.from_mapping(
        {"storage": {"schema_name": schema}, "consolidation": {"embed_worker": False}}
    )
    async with MemoryKernel.open(
        dsn, config=config, clock=FrozenClock(NOW), judge=cast(Judge, KeepBoth()) if judge else None
    ) as kernel:
        phases: dict[str, float] = {}

        rss: dict[str, float] = {}

        def progress(event: ConsolidationProgress) -> None:
            phases.setdefault(event.phase.value, time.perf_counter())
            rss.setdefault(event.phase.value, round(peak_rss_mb()))

        started = time.perf_counter()
        report = await kernel.consolidate(AGENT, progress=progress)
        elapsed = time.perf_counter() - started
        marks = sorted(phases.items(), key=lambda kv: kv[1])
        spans = {
            name: round(end - start, 2)
            for (name, start), (_, end) in zip(
                marks, [*marks[1:], ("end", started + elapsed)], strict=True
            )
        }
    agent = report.agents[0]
    peak = peak_rss_mb()
    print(json.dumps({
        "seconds": elapsed, "peak_mb": peak, "pairs": agent.candidate_pairs,
        "ambiguous": agent.ambiguous, "judge_calls": agent.judge_calls,
        "counts": {str(k): v for k, v in report.counts.items()}, "error": agent.error,
        "phases": spans, "rss_at_phase_start": rss,
    }))  # fmt: skip


async def run_size(
    n: int, dsn: str | None, tmp: Path, *, cold: bool, judge: bool
) -> dict[str, Any]:
    rng = np.random.default_rng(n)
    seed = plant(n, rng, cold=cold)
    schema = f"bench_consolidation_{n}"
    config = MemoryKernelConfig.from_mapping(
        {"storage": {"schema_name": schema}, "consolidation": {"embed_worker": False}}
    )
    async with MemoryKernel.open(dsn, config=config, data_dir=tmp / "pg") as kernel:
        url = dsn or kernel.database.engine.url.render_as_string(hide_password=False)
        raw = url.replace("postgresql+asyncpg://", "postgresql://")
        async with kernel.database.transaction() as conn:
            await conn.execute(facts.delete().where(facts.c.agent_id == AGENT))
        t0 = time.perf_counter()
        await load(raw, schema, seed)
        seeded = time.perf_counter() - t0
        t0 = time.perf_counter()
        await rebalance(kernel.database, NOW)
        promoted = time.perf_counter() - t0
        load_before = os.getloadavg()[0]
        # A child process, so its peak RSS is consolidation's alone (not the seeding's).
        child = await asyncio.create_subprocess_exec(
            sys.executable, __file__, "--child", "--dsn", url, "--schema", schema,
            *(["--judge"] if judge else []),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, err = await child.communicate()
        if child.returncode != 0:
            raise RuntimeError(err.decode()[-3000:])
        result: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])
        async with kernel.database.connection() as conn:
            rows = await conn.execute(
                select(facts.c.id, facts.c.merged_into).where(
                    facts.c.agent_id == AGENT, facts.c.status == "merged"
                )
            )
            merged = {r.id: r.merged_into for r in rows}
        if dsn:
            async with kernel.database.transaction() as conn:
                await conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
    precision, recall, wrong = score(seed, merged)
    result.update(n=n, seeded=seeded, promoted=promoted, precision=precision, recall=recall,
                  forbidden=wrong, planted=sum(len(c) - 1 for c in seed.clusters),
                  load=(load_before, os.getloadavg()[0]))  # fmt: skip
    return result


def show(results: list[dict[str, Any]]) -> None:
    table = Table(title="consolidate(): one agent, planted duplicates and contradictions")
    for column in (
        "facts",
        "time (s)",
        "peak RSS (MB)",
        "pairs",
        "merged",
        "contradictions",
        "decayed",
        "deprecated",
        "precision",
        "recall",
        "forbidden merges",
        "load avg (start/end)",
    ):
        table.add_column(column, justify="right")  # fmt: skip
    for r in results:
        counts = r["counts"]
        table.add_row(
            f"{r['n']:,}", f"{r['seconds']:.1f}", f"{r['peak_mb']:.0f}", f"{r['pairs']:,}",
            f"{counts.get(ConsolidationAction.MERGED.value, 0):,} / {r['planted']:,}",
            f"{counts.get(ConsolidationAction.CONTRADICTION.value, 0):,}",
            f"{counts.get(ConsolidationAction.DECAYED.value, 0):,}",
            f"{counts.get(ConsolidationAction.DEPRECATED.value, 0):,}",
            f"{r['precision']:.3f}", f"{r['recall']:.3f}", str(r["forbidden"]),
            f"{r['load'][0]:.1f} / {r['load'][1]:.1f}",
        )  # fmt: skip
    console.print(table)
    console.print(f"[dim]{os.cpu_count()} CPUs[/]")
    by_n = {r["n"]: r["seconds"] for r in results}
    if 50_000 in by_n and 100_000 in by_n:
        console.print(f"time(100k) / time(50k) = {by_n[100_000] / by_n[50_000]:.2f}")
    for r in results:
        console.print(
            f"[dim]{r['n']:,}: seeding {r['seeded']:.1f}s, partition {r['promoted']:.1f}s; "
            f"phases {r['phases']}; peak RSS (MB) at phase start {r['rss_at_phase_start']}; "
            f"judge cases {r['ambiguous']}, calls {r['judge_calls']}; "
            f"{r['error'] or ''}[/]"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,50000,100000")
    parser.add_argument("--dsn", default=None)
    parser.add_argument(
        "--cold", action="store_true", help="first run ever: every fact decays (and is rewritten)"
    )
    parser.add_argument("--judge", action="store_true", help="with a judge that keeps both")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--schema", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        asyncio.run(consolidate_child(args.dsn, args.schema, judge=args.judge))
        return

    async def all_sizes() -> list[dict[str, Any]]:
        with tempfile.TemporaryDirectory(prefix="mk-bench-") as tmp:
            sizes = [int(s) for s in args.sizes.split(",")]
            return [
                await run_size(n, args.dsn, Path(tmp), cold=args.cold, judge=args.judge)
                for n in sizes
            ]

    show(asyncio.run(all_sizes()))


if __name__ == "__main__":
    main()
