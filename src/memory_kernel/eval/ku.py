"""Knowledge update: after learning an old value and then a new one (no subject), does a
recall for the topic return the new value first, and is the old one retired?

Two runs: each pair in an agent of its own (the headline, as the data set defines it), and
all pairs in one shared agent (old values first, then new ones), which also counts facts
retired by an update that belongs to another pair — over-eager supersession.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from memory_kernel.config import MemoryKernelConfig
from memory_kernel.errors import ConfigError
from memory_kernel.eval.report import SuiteReport
from memory_kernel.eval.store import eval_kernel
from memory_kernel.kernel import MemoryKernel
from memory_kernel.models.facts import FactInput
from memory_kernel.protocols import Embedder
from memory_kernel.testing import FrozenClock

__all__ = ["load_pairs", "run"]


def load_pairs(path: Path) -> list[dict[str, str]]:
    try:
        rows = [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]
        return [
            {k: str(r[k]) for k in ("qi", "topic", "old_fact", "new_fact", "expected_current")}
            for r in rows
        ]
    except (OSError, ValueError, KeyError) as exc:
        raise ConfigError(f"cannot read knowledge-update pairs from {path}: {exc}") from exc


async def _check(
    kernel: MemoryKernel, agent_of: list[str], pairs: list[dict[str, str]],
    ids: list[tuple[uuid.UUID, uuid.UUID]],
) -> list[dict[str, object]]:  # fmt: skip
    rows = []
    facts = kernel.heart.facts
    for agent, pair, (old_id, new_id) in zip(agent_of, pairs, ids, strict=True):
        hits = await facts.search(agent, pair["topic"], k=5)
        old = await facts.get(old_id, agent_id=agent)
        rows.append({
            "qi": pair["qi"],
            "top_is_new": bool(hits) and hits[0].fact.id == new_id,
            "old_active": old.is_current,
            "old_status": old.status.value,
            "top": hits[0].fact.content if hits else "",
        })  # fmt: skip
    return rows


async def _learn(
    kernel: MemoryKernel, clock: FrozenClock, agent_of: list[str], pairs: list[dict[str, str]]
) -> list[tuple[uuid.UUID, uuid.UUID]]:
    facts = kernel.heart.facts
    olds = [await facts.learn(FactInput(agent_id=a, content=p["old_fact"]))
            for a, p in zip(agent_of, pairs, strict=True)]  # fmt: skip
    clock.advance(days=1)
    news = [await facts.learn(FactInput(agent_id=a, content=p["new_fact"]))
            for a, p in zip(agent_of, pairs, strict=True)]  # fmt: skip
    return [(o.fact.id, n.fact.id) for o, n in zip(olds, news, strict=True)]


async def run(
    data: Path, embedder: Embedder, *, config: MemoryKernelConfig | None = None
) -> SuiteReport:
    pairs = load_pairs(data)
    if not pairs:
        raise ConfigError(f"no knowledge-update pairs in {data}")
    clock = FrozenClock()
    async with eval_kernel(embedder, clock=clock, config=config) as kernel:
        own = [f"ku-{n}" for n in range(len(pairs))]
        alone = await _check(kernel, own, pairs, await _learn(kernel, clock, own, pairs))
        shared_agent = ["ku-shared"] * len(pairs)
        ids = await _learn(kernel, clock, shared_agent, pairs)
        shared = await _check(kernel, shared_agent, pairs, ids)
        wrong = await _cross_retired(kernel, ids)
    return SuiteReport(
        suite="ku",
        data=str(data),
        embedder=embedder.name,
        metrics={
            "pairs": len(pairs),
            "newest_value_at_1": sum(bool(r["top_is_new"]) for r in alone),
            "stale_still_active": sum(bool(r["old_active"]) for r in alone),
            "shared_newest_value_at_1": sum(bool(r["top_is_new"]) for r in shared),
            "shared_stale_still_active": sum(bool(r["old_active"]) for r in shared),
            "shared_retired_by_other_pair": wrong,
        },
        tables={"pairs": alone, "shared_agent": shared},
        notes=["newest_value_at_1 counts pairs whose top search hit for the topic is the new fact"],
        targets={"newest_value_at_1": f"= {len(pairs)}", "stale_still_active": "0"},
    )


async def _cross_retired(kernel: MemoryKernel, ids: list[tuple[uuid.UUID, uuid.UUID]]) -> int:
    """Facts of the shared run retired by a fact that is not their own pair's new value."""
    facts = kernel.heart.facts
    own_new = {old: new for old, new in ids}
    count = 0
    for old, new in ids:
        for fact_id in (old, new):
            fact = await facts.get(fact_id, agent_id="ku-shared")
            by = fact.superseded_by
            if by is not None and by != own_new.get(fact_id):
                count += 1
    return count
