"""Knowledge update: after learning an older fact and then a newer one (no subject), is the
older one retired when the newer one updates it, and kept when it does not?

Rows: ``{"qi" | "id", "topic", "old_fact", "new_fact", "expected_current", "label"}`` with
``label`` ``update`` (the default: the newer fact replaces the older value) or ``distinct``
(a look-alike that is not an update: both must stay current; ``expected_current`` null). One
file may mix both.

Headline run: each pair in an agent of its own (so a pair's result does not depend on the
other pairs): learn old, a day later learn new, then

- update pairs: ``newest_value_at_1`` (a recall for the topic returns the new fact first),
  ``stale_still_active`` (write time: the old fact is still current) and
  ``stale_presented_as_current`` (read time: the old fact is still current, recalled for
  the topic, and not marked as replaced by the new one, ``FactSearchHit.newer_value``);
- distinct pairs: ``wrongly_superseded`` (the old fact, admitted, is no longer current),
  ``wrongly_merged`` (the new fact was merged into the old one as a duplicate) and
  ``wrongly_dated_at_read`` (the old fact, still current, recalled marked as replaced).

A second run puts all pairs in one shared agent (old facts first, then new ones), which also
counts facts retired by a fact of another pair (``shared_retired_by_other_pair``) and old
facts recalled for their topic marked as replaced by a fact of another pair
(``shared_dated_by_other_pair``): over-eager supersession, at write and at read. A pair alone
has no other fact to be mistaken for, so only this run measures that; a file that mixes
update and distinct rows makes the store more crowded. Cross-validated, each held-out fold
is checked in such an agent too, holding every pair of the file with the fold's scorers
(:func:`decide_with_shared`); the retirements across all pairs stay a development figure.
The shared agent is read twice: by ``facts.search`` (``shared_*``) and by the context's
recall (``shared_context_*``: ``search_memory`` for facts, the recall ``pre_turn`` and the
agent's recall tool use), which ranks its own pool of candidates and resolves them there.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from memory_kernel.config import MemoryKernelConfig
from memory_kernel.errors import ConfigError
from memory_kernel.eval._metrics import Metrics
from memory_kernel.eval.kernel_api import (
    FactInput,
    FrozenClock,
    LearnAction,
    LearnOutcome,
    MemoryKernel,
)
from memory_kernel.eval.nightly import JudgeLog, consolidate_judged, judge_opened
from memory_kernel.eval.report import SuiteReport
from memory_kernel.eval.store import eval_kernel
from memory_kernel.eval.targets import targets_for
from memory_kernel.judges.base import Judge
from memory_kernel.models.consolidation import ConsolidationAction
from memory_kernel.protocols import Embedder

__all__ = [
    "KuCheck", "KuPair", "decide_with_shared", "learn_pairs", "load_pairs", "run", "score",
    "score_with_shared",
]  # fmt: skip

LABELS = ("update", "distinct")
JUDGED_NOTE = (
    "with a judge: every agent consolidated with it after learning, until it had answered "
    "every question; judge_superseded and judge_merged count what its answers retired"
)
_JUDGED = {
    "judge_superseded": ConsolidationAction.SUPERSEDED,
    "judge_merged": ConsolidationAction.MERGED,
}
SHARED_AGENT = "ku-shared"


class KuPair(NamedTuple):
    id: str
    topic: str
    old_fact: str
    new_fact: str
    expected_current: str | None
    label: str  # update | distinct
    kind: str = ""


class KuCheck(NamedTuple):
    """What became of one pair after both facts were learned."""

    top_is_new: bool  # the topic's first search hit is the new fact
    old_current: bool  # the old fact is still current
    old_admitted: bool
    new_action: str  # the LearnAction of the new fact
    old_status: str
    top: str
    # Read time: the old fact among the topic's hits, and whether it came marked as replaced
    # by a newer value (``FactSearchHit.newer_value``, the read-time resolution).
    old_shown: bool = False
    old_dated: bool = False
    old_dated_by_other: bool = False  # marked as replaced by a fact of another pair
    dated_by: str = ""  # the text of the fact that marks it, where another pair's

    @property
    def presented_as_current(self) -> bool:
        """The old fact is recalled for the topic and nothing marks it as out of date."""
        return self.old_current and self.old_shown and not self.old_dated

    @property
    def merged(self) -> bool:
        return self.new_action == LearnAction.REINFORCED.value


def _pair(row: dict[str, Any]) -> KuPair:
    key = row["qi"] if "qi" in row else row["id"]
    label = str(row.get("label") or "update")
    if label not in LABELS:
        raise ValueError(f"label {label!r} is not one of {LABELS}")
    current = row.get("expected_current")
    return KuPair(
        id=str(key), topic=str(row["topic"]), old_fact=str(row["old_fact"]),
        new_fact=str(row["new_fact"]), expected_current=None if current is None else str(current),
        label=label, kind=str(row.get("kind") or ""),
    )  # fmt: skip


def load_pairs(path: Path) -> list[KuPair]:
    try:
        rows = [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]
        pairs = [_pair(row) for row in rows]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"cannot read knowledge-update pairs from {path}: {exc}") from exc
    ids = Counter(p.id for p in pairs)
    if len(ids) != len(pairs):
        raise ConfigError(f"{path}: duplicate ids {[k for k, v in ids.items() if v > 1][:5]}")
    return pairs


async def learn_pairs(
    kernel: MemoryKernel, clock: FrozenClock, agent_of: list[str], pairs: Sequence[KuPair]
) -> list[tuple[LearnOutcome, LearnOutcome]]:
    """Every pair's older fact into its agent (``agent_of``), then, a day later, every newer
    one: (old, new) outcomes, pair by pair."""
    facts = kernel.heart.facts
    olds = [await facts.learn(FactInput(agent_id=a, content=p.old_fact))
            for a, p in zip(agent_of, pairs, strict=True)]  # fmt: skip
    clock.advance(days=1)
    news = [await facts.learn(FactInput(agent_id=a, content=p.new_fact))
            for a, p in zip(agent_of, pairs, strict=True)]  # fmt: skip
    return list(zip(olds, news, strict=True))


class Recalled(NamedTuple):
    """One fact recalled for a topic."""

    id: uuid.UUID
    newer: uuid.UUID | None  # the newer value it was marked with (read-time resolution)
    text: str


async def _recall(kernel: MemoryKernel, agent: str, topic: str, *, context: bool) -> list[Recalled]:
    """The first five facts recalled for ``topic``: by ``facts.search``, or by the context's
    recall (``search_memory``, the recall of ``pre_turn`` and of the agent's tool)."""
    if context:
        found = await kernel.search_memory(agent, topic, search_type="facts", limit=5)
        return [Recalled(h.id, h.replaced_by, h.text) for h in found]
    hits = await kernel.heart.facts.search(agent, topic, k=5)
    return [Recalled(h.fact.id, h.newer_value, h.fact.content) for h in hits]


async def _check(
    kernel: MemoryKernel, agent_of: list[str], pairs: Sequence[KuPair],
    learned: list[tuple[LearnOutcome, LearnOutcome]], *, context: bool = False,
) -> list[KuCheck]:  # fmt: skip
    checks = []
    facts = kernel.heart.facts
    for agent, pair, (old, new) in zip(agent_of, pairs, learned, strict=True):
        hits = await _recall(kernel, agent, pair.topic, context=context)
        after = await facts.get(old.fact.id, agent_id=agent)
        marks = {hit.id: hit.newer for hit in hits}
        shown, newer = old.fact.id in marks, marks.get(old.fact.id)
        by_other = shown and newer not in (None, new.fact.id)
        marker = await facts.get(newer, agent_id=agent) if by_other and newer else None
        checks.append(KuCheck(
            top_is_new=bool(hits) and hits[0].id == new.fact.id,
            old_current=after.is_current,
            old_admitted=old.action is not LearnAction.REJECTED,
            new_action=new.action.value,
            old_status=after.status.value,
            top=hits[0].text if hits else "",
            old_shown=shown,
            old_dated=shown and newer == new.fact.id,
            old_dated_by_other=by_other,
            dated_by=marker.content if marker else "",
        ))  # fmt: skip
    return checks


async def _nightly(kernel: MemoryKernel, agents: Sequence[str], log: JudgeLog | None) -> None:
    """With a judge (``log`` holds what it was asked), each agent's nightly runs."""
    if log is not None:
        for agent in dict.fromkeys(agents):
            await consolidate_judged(kernel, agent, log, _JUDGED)


async def _alone(
    kernel: MemoryKernel, clock: FrozenClock, pairs: Sequence[KuPair], log: JudgeLog | None = None
) -> list[KuCheck]:
    agents = [f"ku-{n}" for n in range(len(pairs))]
    learned = await learn_pairs(kernel, clock, agents, pairs)
    await _nightly(kernel, agents, log)
    return await _check(kernel, agents, pairs, learned)


async def _shared(
    kernel: MemoryKernel, clock: FrozenClock, pairs: Sequence[KuPair], log: JudgeLog | None = None
) -> tuple[list[KuCheck], list[KuCheck], list[tuple[LearnOutcome, LearnOutcome]]]:
    """Every pair in one agent, read by ``facts.search`` and by the context's recall."""
    agents = [SHARED_AGENT] * len(pairs)
    learned = await learn_pairs(kernel, clock, agents, pairs)
    await _nightly(kernel, agents, log)
    searched = await _check(kernel, agents, pairs, learned)
    recalled = await _check(kernel, agents, pairs, learned, context=True)
    return searched, recalled, learned


#: What became of one pair: alone, in the shared agent by ``facts.search``, and in the
#: shared agent by the context's recall.
Checked = tuple[KuCheck, KuCheck, KuCheck]


async def decide_with_shared(
    chosen: Sequence[KuPair], every: Sequence[KuPair], embedder: Embedder,
    config: MemoryKernelConfig | None = None, judge: Judge | None = None,
) -> list[Checked]:  # fmt: skip
    """What became of each ``chosen`` pair alone (an agent of its own) and in one agent holding
    ``every`` pair of the file, the rest of the store the chosen pairs must not be
    mistaken for (cross-validation: the held-out pairs among all); with ``judge``, after
    the nightly runs in which it answered."""
    clock = FrozenClock()
    log = None if judge is None else JudgeLog()
    async with eval_kernel(embedder, clock=clock, config=config, judge=judge) as kernel:
        alone = await _alone(kernel, clock, chosen, log)
        searched, recalled, _ = await _shared(kernel, clock, every, log)
    by_id = {
        p.id: both for p, both in zip(every, zip(searched, recalled, strict=True), strict=True)
    }
    return [(a, *by_id[p.id]) for p, a in zip(chosen, alone, strict=True)]


def score_with_shared(pairs: Sequence[KuPair], checks: Sequence[Checked]) -> Metrics:
    """:func:`score` of the pairs alone, and of the same pairs in the shared agent, read by
    ``facts.search`` (``shared_``) and by the context's recall (``shared_context_``)."""
    metrics = score(pairs, [alone for alone, _, _ in checks])
    metrics.update(score(pairs, [shared for _, shared, _ in checks], prefix="shared_"))
    metrics.update(score(pairs, [ctx for _, _, ctx in checks], prefix="shared_context_"))
    return metrics


def _rate(count: int, total: int) -> float:
    return round(count / total, 4) if total else 0.0


def score(pairs: Sequence[KuPair], checks: Sequence[KuCheck], *, prefix: str = "") -> Metrics:
    """Metrics of ``pairs`` given what became of each (pure): the update measures when there
    are update pairs, the look-alike measures when there are distinct pairs."""
    both = list(zip(pairs, checks, strict=True))
    updates = [c for p, c in both if p.label == "update"]
    distinct = [c for p, c in both if p.label == "distinct"]
    metrics: Metrics = {} if prefix else {
        "pairs": len(pairs), "update_pairs": len(updates), "distinct_pairs": len(distinct),
    }  # fmt: skip
    if updates:
        newest = sum(c.top_is_new for c in updates)
        metrics[f"{prefix}newest_value_at_1"] = newest
        metrics[f"{prefix}newest_value_at_1_rate"] = _rate(newest, len(updates))
        metrics[f"{prefix}stale_still_active"] = sum(c.old_current for c in updates)
        metrics[f"{prefix}stale_presented_as_current"] = sum(
            c.presented_as_current for c in updates
        )
    if distinct:
        retired = sum(c.old_admitted and not c.old_current for c in distinct)
        merged = sum(c.merged for c in distinct)
        metrics[f"{prefix}wrongly_superseded"] = retired
        metrics[f"{prefix}wrongly_superseded_rate"] = _rate(retired, len(distinct))
        metrics[f"{prefix}wrongly_merged"] = merged
        metrics[f"{prefix}wrongly_merged_rate"] = _rate(merged, len(distinct))
        dated = sum(c.old_current and c.old_dated for c in distinct)
        metrics[f"{prefix}wrongly_dated_at_read"] = dated
        metrics[f"{prefix}wrongly_dated_at_read_rate"] = _rate(dated, len(distinct))
    if prefix:
        metrics[f"{prefix}dated_by_other_pair"] = sum(
            c.old_current and c.old_dated_by_other for c in checks
        )
    else:
        metrics["old_not_admitted"] = sum(not c.old_admitted for c in checks)
    return metrics


def _table(pairs: Sequence[KuPair], checks: Sequence[KuCheck]) -> list[dict[str, object]]:
    return [
        {"id": p.id, "label": p.label, "kind": p.kind, "top_is_new": c.top_is_new,
         "old_active": c.old_current, "old_status": c.old_status, "new_action": c.new_action,
         "old_dated": c.old_dated, "old_dated_by_other": c.old_dated_by_other,
         "dated_by": c.dated_by, "top": c.top}
        for p, c in zip(pairs, checks, strict=True)
    ]  # fmt: skip


async def run(
    data: Path, embedder: Embedder, *, config: MemoryKernelConfig | None = None,
    judge: str | Judge | None = None,
) -> SuiteReport:  # fmt: skip
    """The suite; with ``judge`` (``openai:<model>@<base_url>``, or a judge object), every
    agent is consolidated with it after learning, until it has answered every question
    (conflicts, the update band, merges), and the pairs are checked after that."""
    pairs = load_pairs(data)
    if not pairs:
        raise ConfigError(f"no knowledge-update pairs in {data}")
    clock = FrozenClock()
    log = None if judge is None else JudgeLog(_JUDGED)
    async with (
        judge_opened(judge) as chosen,
        eval_kernel(embedder, clock=clock, config=config, judge=chosen) as kernel,
    ):
        alone = await _alone(kernel, clock, pairs, log)
        shared, recalled, learned = await _shared(kernel, clock, pairs, log)
        wrong = await _cross_retired(kernel, [(o.fact.id, n.fact.id) for o, n in learned])
    metrics = score_with_shared(pairs, list(zip(alone, shared, recalled, strict=True)))
    metrics["shared_retired_by_other_pair"] = wrong
    metrics.update(log.counts if log else {})
    return SuiteReport(
        suite="ku",
        data=str(data),
        embedder=embedder.name,
        metrics=metrics,
        tables={
            "pairs": _table(pairs, alone),
            "shared_agent": _table(pairs, shared),
            "shared_agent_context": _table(pairs, recalled),
        },
        notes=[
            "newest_value_at_1 counts update pairs whose top search hit for the topic is the "
            "new fact; wrongly_superseded counts distinct pairs whose admitted old fact is no "
            "longer current after the new one was learned",
            "shared_*: every pair in one agent (old facts first, then new ones); "
            "shared_context_*: the same agent read by the context's recall (search_memory)",
            *([] if log is None else [JUDGED_NOTE, *log.notes()]),
        ],
        targets=targets_for("ku", metrics),
    )


async def _cross_retired(kernel: MemoryKernel, ids: list[tuple[uuid.UUID, uuid.UUID]]) -> int:
    """Facts of the shared run retired by a fact that is not their own pair's new value."""
    facts = kernel.heart.facts
    own_new = {old: new for old, new in ids}
    count = 0
    for old, new in ids:
        for fact_id in (old, new):
            fact = await facts.get(fact_id, agent_id=SHARED_AGENT)
            by = fact.superseded_by
            if by is not None and by != own_new.get(fact_id):
                count += 1
    return count
