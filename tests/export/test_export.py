"""``export_agent`` and ``memory-kernel export`` on a real PostgreSQL: every row the agent
has (every version of a fact, rejected decisions, the audit trail), nobody else's, JSON-
ready, from one snapshot."""

from __future__ import annotations

import asyncio
import json
from contextlib import aclosing
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memory_kernel import FactInput, MemoryKernel, ValidationError
from memory_kernel.cli import app
from memory_kernel.testing import FakeEmbedder
from tests.erasure.conftest import exchange, rows

AGENT = "agent-x"
DECISION = (
    "We'll use PostgreSQL with pgvector rather than a separate vector database, because it "
    "keeps transactions and embeddings in one place."
)


async def _fill(kernel: MemoryKernel, agent: str) -> None:
    for content in ("Spec 006 is planned", "Spec 006 has shipped"):
        await kernel.heart.facts.learn(
            FactInput(agent_id=agent, subject="006 status", content=content)
        )
    await exchange(kernel, agent, "How should we store embeddings?", DECISION, frame="decision")
    await exchange(kernel, agent, "Done! ✅", "Done! ✅", frame="decision")  # rejected
    await kernel.end_session(agent, "s1")


async def _export(kernel: MemoryKernel, agent: str, **options: bool) -> list[dict[str, object]]:
    return [record async for record in kernel.export_agent(agent, **options)]


async def test_every_row_of_the_agent_and_nobody_elses(kernel: MemoryKernel) -> None:
    for agent in (AGENT, "other"):
        await _fill(kernel, agent)
    records = await _export(kernel, AGENT)

    stored = await rows(kernel, AGENT)
    by_table: dict[str, list[dict[str, object]]] = {}
    for record in records:
        json.dumps(record)  # JSON-ready as it comes
        by_table.setdefault(str(record["table"]), []).append(record["row"])  # type: ignore[arg-type]
    assert {t: len(r) for t, r in by_table.items()} == {
        t: n for t, n in stored.items() if t in ("facts", "episodes", "decisions", "turns",
                                                  "memory_events")
    }  # fmt: skip
    assert all(r["agent_id"] == AGENT for rs in by_table.values() for r in rs)
    facts = {r["content"]: r["status"] for r in by_table["facts"]}
    assert facts == {"Spec 006 is planned": "superseded", "Spec 006 has shipped": "active"}
    assert any(r["rejection_reason"] for r in by_table["decisions"])
    assert all(
        "embedding" not in r and "search_tsv" not in r for rs in by_table.values() for r in rs
    )


async def test_vectors_only_when_asked(kernel: MemoryKernel, embedder: FakeEmbedder) -> None:
    await kernel.heart.facts.learn(FactInput(agent_id=AGENT, content="The user's dog is Rex."))
    (record,) = [r for r in await _export(kernel, AGENT, vectors=True) if r["table"] == "facts"]
    vector = record["row"]["embedding"]  # type: ignore[index]
    assert isinstance(vector, list) and len(vector) == embedder.dim
    assert all(isinstance(x, float) for x in vector)


async def test_one_snapshot_whatever_is_written_meanwhile(kernel: MemoryKernel) -> None:
    for i in range(3):
        await kernel.heart.facts.learn(FactInput(agent_id=AGENT, content=f"Service {i} runs."))
    async with aclosing(kernel.export_agent(AGENT)) as records:
        first = await anext(records)
        # Written (and committed) while the export is half way: not in it.
        await kernel.heart.facts.learn(FactInput(agent_id=AGENT, content="Service 9 runs."))
        rest = [r async for r in records]
    contents = [r["row"]["content"] for r in (first, *rest) if r["table"] == "facts"]
    assert sorted(contents) == ["Service 0 runs.", "Service 1 runs.", "Service 2 runs."]


async def test_a_bad_agent_id_fails_at_once(kernel: MemoryKernel) -> None:
    with pytest.raises(ValidationError):
        kernel.export_agent("two words")
    assert await _export(kernel, "nobody") == []


async def test_cli_writes_json_lines(
    kernel: MemoryKernel, pg_dsn: str, drop_schema: str, tmp_path: Path
) -> None:
    await _fill(kernel, AGENT)
    out = tmp_path / "agent.jsonl"
    argv = ["export", "--agent", AGENT, "--out", str(out), "--dsn", pg_dsn, "--schema", drop_schema]
    result = await asyncio.to_thread(lambda: CliRunner().invoke(app, argv))
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert lines == await _export(kernel, AGENT)
    assert "facts" in result.output
