"""Nightly maintenance: what ``kernel.consolidate`` and ``consolidate_all`` do to a store.

``python examples/nightly_consolidation.py`` (embedded PostgreSQL in a temporary directory;
see ``_store.py`` for ``MEMORY_KERNEL_DSN``).

Three weeks of an agent's life are simulated with an injectable clock
(``memory_kernel.testing.FrozenClock``; in production the kernel uses the system clock):

- facts bulk-imported with ``defer_embedding=True`` (no embedder call on the write path):
  the nightly run embeds them, and those that repeat a known fact are folded into it;
- two facts that say opposite things: flagged at learn time, their confidences are halved;
- a finished episode that confirms a fact: evidence, the fact's confidence goes up;
- facts nobody confirmed for three weeks decay; one falls below 0.3 and is deprecated.

A dry run reports exactly what the real run then does (it rehearses the run in a
transaction that is rolled back) and changes nothing; the real run applies it. Then
``consolidate_all`` runs every agent, ``concurrency`` at a time, each under a Postgres
advisory lock — schedule it from cron, a Kubernetes CronJob or your task queue, on as many
workers as you like.
"""

from __future__ import annotations

import asyncio
import uuid

from _store import open_store

from memory_kernel import (
    ConsolidationReport,
    EpisodeInput,
    FactInput,
    LearnOutcome,
    MemoryKernel,
)
from memory_kernel.testing import FrozenClock

AGENT, OTHER = "ops-agent", "support-agent"


async def learn(kernel: MemoryKernel, agent: str, content: str, **options: object) -> uuid.UUID:
    outcome: LearnOutcome = await kernel.heart.facts.learn(
        FactInput(agent_id=agent, content=content, **options)
    )
    print(f"  learn  {outcome.action:<13} {content}")
    return outcome.fact.id


async def seed(kernel: MemoryKernel, clock: FrozenClock) -> dict[str, uuid.UUID]:
    print(f"day 0: {AGENT} learns")
    ids = {
        "db": await learn(
            kernel, AGENT, "The staging database runs on PostgreSQL 16 in Frankfurt", confidence=0.6
        ),
        "backup_on": await learn(
            kernel,
            AGENT,
            "The nightly backup job is enabled for the billing cluster",
            confidence=0.9,
        ),
        "backup_off": await learn(
            kernel,
            AGENT,
            "The nightly backup job is not enabled for the billing cluster",
            confidence=0.9,
        ),
        "vpn": await learn(kernel, AGENT, "The old VPN gateway is in Dublin", confidence=0.32),
        "theme": await learn(
            kernel, AGENT, "The user prefers dark mode in the code editor", confidence=0.9
        ),
    }
    print("day 0: a bulk import, embedding deferred to the nightly run")
    await learn(kernel, AGENT, "User prefers dark mode in the editor", defer_embedding=True)
    for text in (
        "Refunds above 500 EUR need a manager's approval",
        "Refunds over 500 EUR need approval from a manager",
    ):
        await learn(kernel, OTHER, text, defer_embedding=True)
    clock.advance(days=21)
    print("day 21: a finished run confirms the staging database fact")
    run = await kernel.heart.episodes.start(
        EpisodeInput(
            agent_id=AGENT,
            session_id="maintenance",
            summary="The staging database runs on PostgreSQL 16 in Frankfurt",
        )
    )
    await kernel.heart.episodes.end(run.episode.id, agent_id=AGENT, outcome="success")
    return ids


def show(title: str, report: ConsolidationReport) -> None:
    print(f"\n{title} ({'dry run' if report.dry_run else 'applied'}, {len(report.agents)} agents)")
    for agent in report.agents:
        counts = ", ".join(f"{a.value} {n}" for a, n in sorted(agent.counts.items())) or "nothing"
        print(
            f"  {agent.agent_id:<14} {agent.status.value:<8} scanned {agent.facts_scanned:>2}"
            f"  pairs {agent.candidate_pairs:>2}  {counts}"
        )


async def confidences(kernel: MemoryKernel, ids: dict[str, uuid.UUID]) -> str:
    parts = []
    for name, fact_id in ids.items():
        fact = await kernel.heart.facts.get(fact_id, agent_id=AGENT)
        parts.append(f"{name} {fact.confidence:.2f} {fact.status.value}")
    return "; ".join(parts)


async def main() -> None:
    clock = FrozenClock()
    # No background embedding worker: the pending facts wait for the nightly run.
    async with open_store({"consolidation": {"embed_worker": False}}, clock=clock) as kernel:
        ids = await seed(kernel, clock)
        print(f"\nbefore:          {await confidences(kernel, ids)}")
        show("consolidate(ops-agent, dry_run=True)", await kernel.consolidate(AGENT, dry_run=True))
        print(f"after dry run:   {await confidences(kernel, ids)}")
        show("consolidate(ops-agent)", await kernel.consolidate(AGENT))
        print(f"after real run:  {await confidences(kernel, ids)}")
        report = await kernel.consolidate_all(concurrency=2)
        show("consolidate_all(concurrency=2)", report)
        print(f"skipped (busy elsewhere): {list(report.skipped_agents)}")
        print(f"failed: {list(report.failed_agents)}")


if __name__ == "__main__":
    asyncio.run(main())
