"""Admission control of finished runs: the seed's four scenarios, with the rule judge.

Run it with ``python examples/admission.py``. It starts an embedded PostgreSQL in a
temporary directory (nothing is kept), plays the scenarios and prints each decision:

1. ADD      a run of a task never seen before
2. NOT      the same run again, same outcome, nothing new
3. REPLACE  a task that failed, then succeeded
4. MERGE    two successful runs of a task with different references

Pass ``--dsn postgresql://...`` to use your own server instead (a throwaway schema).
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import uuid
from collections.abc import Sequence
from pathlib import Path

from memory_kernel import MemoryKernel, MemoryKernelConfig
from memory_kernel.models.episodes import EpisodeEnd, EpisodeInput

AGENT = "example-agent"


async def finish(
    kernel: MemoryKernel,
    summary: str,
    outcome: str,
    references: Sequence[str] = (),
) -> EpisodeEnd:
    """One whole run: start an episode, end it, and print the admission decision."""
    started = await kernel.heart.episodes.start(
        EpisodeInput(agent_id=AGENT, session_id="example", summary=summary)
    )
    end = await kernel.heart.episodes.end(
        started.episode.id, agent_id=AGENT, outcome=outcome, references=references
    )
    similarity = "-" if end.similarity is None else f"{end.similarity:.2f}"
    print(f"  {outcome:<8} {summary[:52]:<52} -> {end.decision.value}")
    print(f"           similarity {similarity}, decided by {end.decided_by}: {end.reason}")
    return end


async def play(kernel: MemoryKernel) -> None:
    schema = "Generate the database schema for the orders service"
    print("1. a new task")
    await finish(kernel, schema, "success", ["docs/orders.md"])
    print("2. the identical run again")
    await finish(kernel, schema, "success", ["docs/orders.md"])

    migrate = "Migrate the invoices table to the new billing schema"
    print("3. a failed run, then a successful one")
    failed = await finish(kernel, migrate, "failure")
    await finish(kernel, "Migrate invoices table to new billing schema", "success")
    old = await kernel.heart.episodes.get(failed.episode.id, agent_id=AGENT)
    print(f"           the failed run is now {old.admission}, superseded by {old.superseded_by}")

    guide = "Write the deployment guide for the payments API"
    print("4. two successful runs with different references")
    await finish(kernel, guide, "success", ["runbooks/blue-green.md"])
    merged = await finish(
        kernel, "Write a deployment guide for the payments API", "success", ["runbooks/canary.md"]
    )
    print(f"           canonical run references: {', '.join(merged.episode.references)}")

    hits = await kernel.heart.episodes.search(AGENT, "orders schema invoices payments", k=10)
    print(f"search returns {len(hits)} runs (no NOT, no superseded):")
    for hit in hits:
        ep = hit.episode
        print(f"  {hit.similarity:.2f}  {ep.outcome:<8} canonical={ep.canonical!s:<5} {ep.summary}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", help="a PostgreSQL + pgvector DSN (default: embedded)")
    args = parser.parse_args()
    if args.dsn:
        schema = f"example_{uuid.uuid4().hex[:8]}"
        config = MemoryKernelConfig.from_mapping({"storage": {"schema_name": schema}})
        async with MemoryKernel.open(args.dsn, config=config) as kernel:
            await play(kernel)
        print(f"(left schema {schema} in your database: drop it when done)")
        return
    with tempfile.TemporaryDirectory(prefix="mk-example-") as tmp:
        async with MemoryKernel.open(data_dir=Path(tmp) / "pg") as kernel:
            await play(kernel)


if __name__ == "__main__":
    asyncio.run(main())
