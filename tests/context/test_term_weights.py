"""Recall's keyword weights follow the data and are never negative (issue 22's bug: the row
count N was reused for 30 s, so right after a burst of writes N was 0 while the words were
counted fresh, and a query word weighed -1.5 against the memories holding it). Real
Postgres."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from memory_kernel import MemoryKernel
from memory_kernel.context.retrieval import TermStats, weigh
from memory_kernel.models.context import MemorySource
from memory_kernel.storage.tables import facts

NOW = datetime(2026, 1, 1, tzinfo=UTC)
FACT = MemorySource.FACT


def _rows(agent: str, texts: list[str]) -> list[dict[str, object]]:
    return [
        {
            "agent_id": agent, "id": uuid.uuid4(), "content": text, "confidence": 0.8,
            "status": "active", "embedding": None, "last_evidence_at": NOW, "valid_from": NOW,
            "created_at": NOW, "updated_at": NOW,
        }
        for text in texts
    ]  # fmt: skip


async def _insert(kernel: MemoryKernel, agent: str, texts: list[str]) -> None:
    async with kernel.database.transaction() as conn:
        await conn.execute(facts.insert(), _rows(agent, texts))


def test_a_stale_row_count_never_makes_a_weight_negative() -> None:
    # N = 0 reused from before the writes, the word counted after them: 3 rows hold it.
    (term,) = weigh(TermStats(rows=0, terms={"problems": ("'problem'", 3)}), ["problems"])
    assert term.weight > 0
    (same,) = weigh(TermStats(rows=3, terms={"problems": ("'problem'", 3)}), ["problems"])
    assert term.weight == same.weight  # as if N were counted with the word


async def test_weights_right_after_a_burst_of_writes_count_the_new_rows(
    kernel: MemoryKernel,
) -> None:
    recaller = kernel.context.recaller
    query = "problems with the boiler"
    assert await recaller.term_weights(FACT, agent_id="a", query=query, min_confidence=0.5) == []
    await _insert(kernel, "a", [f"Boiler problems on floor {i}." for i in range(3)])
    await _insert(kernel, "a", [f"Window {i} is open." for i in range(5)])
    weights = await recaller.term_weights(FACT, agent_id="a", query=query, min_confidence=0.5)
    assert [(w.tsquery, w.rows) for w in weights] == [("'problem'", 3), ("'boiler'", 3)]
    assert all(w.weight > 0 for w in weights)
    # And a recall right away finds the rows by those words (they have no vector).
    hits = await kernel.search_memory("a", query, search_type="facts")
    assert {h.text for h in hits[:3]} == {f"Boiler problems on floor {i}." for i in range(3)}


async def test_a_large_agents_reused_counts_still_follow_new_words(kernel: MemoryKernel) -> None:
    recaller = kernel.context.recaller
    await _insert(kernel, "big", [f"Project note {i}." for i in range(1200)])
    first = await recaller.term_weights(FACT, agent_id="big", query="project zebra",
                                        min_confidence=0.5)  # fmt: skip
    assert [w.rows for w in first] == [1200]  # no row says "zebra" yet
    await _insert(kernel, "big", [f"Zebra {i} crossed." for i in range(40)])
    later = await recaller.term_weights(FACT, agent_id="big", query="project zebra",
                                        min_confidence=0.5)  # fmt: skip
    assert [w.rows for w in later] == [1200, 40]  # "zebra" was never cached as absent
    assert all(w.weight > 0 for w in later)
    assert later[1].weight > later[0].weight
