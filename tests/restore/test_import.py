"""``import_agent`` and ``memory-kernel import`` on a real PostgreSQL: an export written back
as another agent, or into another store, reads back the same (ids, versions, audit trail,
vectors made again); a bad record, a non-empty target or a failing embedder writes nothing."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine
from typer.testing import CliRunner

from memory_kernel import EmbedderError, FactInput, MemoryKernel, ValidationError
from memory_kernel.cli import app
from memory_kernel.heart.extraction import RuleExtractor
from memory_kernel.restore.policy import MAX_VALUE_BYTES
from memory_kernel.testing import FakeEmbedder, FrozenClock
from tests.conftest import schema_config
from tests.erasure.conftest import exchange, rows
from tests.export.test_export import AGENT, _export, _fill

Records = list[dict[str, Any]]


def _as(records: Records, agent: str) -> Records:
    return [{**r, "row": {**r["row"], "agent_id": agent}} for r in records]


@pytest.fixture
async def elsewhere(
    pg_dsn: str, drop_schema: str, clock: FrozenClock, embedder: FakeEmbedder
) -> AsyncIterator[MemoryKernel]:
    """A kernel on a second, empty store (another schema of the same server)."""
    schema = f"{drop_schema}_b"
    try:
        async with MemoryKernel.open(
            pg_dsn, config=schema_config(schema), clock=clock, embedder=embedder
        ) as kernel:
            yield kernel
    finally:
        engine = create_async_engine(pg_dsn)
        async with engine.begin() as conn:
            await conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
        await engine.dispose()


async def test_an_export_imported_as_another_agent_reads_back_the_same(
    kernel: MemoryKernel,
) -> None:
    await _fill(kernel, AGENT)
    exported: Records = await _export(kernel, AGENT, vectors=True)

    # An export does not say which embedder made its vectors: they are never taken.
    spoiled = [
        {**r, "row": {**r["row"], "embedding": [0.0, 1.0]}} if "embedding" in r["row"] else r
        for r in exported
    ]
    report = await kernel.import_agent(spoiled, agent_id="agent-copy")

    assert report.agent_id == "agent-copy"
    assert (report.facts, report.decisions) == (2, 2)
    assert report.embedded == sum(r["table"] != "memory_events" for r in exported)
    # Every row as it was, its vector made again by this kernel's embedder.
    assert await _export(kernel, "agent-copy", vectors=True) == _as(exported, "agent-copy")
    current = await kernel.heart.facts.search("agent-copy", "006 status")
    assert [h.fact.content for h in current][:1] == ["Spec 006 has shipped"]
    hits = await kernel.heart.episodes.search("agent-copy", "store embeddings")
    assert hits and all(h.episode.agent_id == "agent-copy" for h in hits)
    # Bookkeeping is not memory: recorded post_turn results are not exported or imported.
    assert (await rows(kernel, "agent-copy"))["turn_results"] == 0


async def test_an_agent_moves_to_another_store(
    kernel: MemoryKernel, elsewhere: MemoryKernel
) -> None:
    await _fill(kernel, AGENT)
    exported = await _export(kernel, AGENT)

    report = await elsewhere.import_agent(_records(exported))

    assert report.agent_id == AGENT
    assert await _export(elsewhere, AGENT) == exported
    # It goes on there: a new turn of the same agent works with what it brought.
    ctx, _ = await exchange(elsewhere, AGENT, "Where do we keep our embeddings?", session="s9")
    assert "pgvector" in ctx.text


async def _records(records: Records) -> AsyncIterator[dict[str, Any]]:
    for record in records:  # an async iterable is read as well as a list
        yield record


async def test_an_agent_with_memories_is_never_mixed_with_an_import(
    kernel: MemoryKernel,
) -> None:
    await _fill(kernel, AGENT)
    exported = await _export(kernel, AGENT)
    await kernel.heart.facts.learn(FactInput(agent_id="busy", content="The user's dog is Rex."))
    before = await rows(kernel, "busy")

    for target in (AGENT, "busy"):
        with pytest.raises(ValidationError, match="already has memories"):
            await kernel.import_agent(exported, agent_id=target)
    assert await rows(kernel, "busy") == before


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda r: {**r, "table": "kernel_meta"}, "table must be one of"),
        (lambda r: {**r, "extra": 1}, "expected"),
        (lambda r: {**r, "row": {**r["row"], "colour": "red"}}, "has no column"),
        (lambda r: {**r, "row": {**r["row"], "agent_id": "someone-else"}}, "holds one agent"),
        (lambda r: {**r, "row": {**r["row"], "id": "not-a-uuid"}}, "badly formed"),
        (lambda r: {**r, "row": {**r["row"], "created_at": "2026-01-01T12:00:00"}}, "UTC offset"),
        (lambda r: {**r, "row": {**r["row"], "content": "a\x00b"}}, "NUL"),
        (lambda r: {**r, "row": {**r["row"], "content": "x" * (MAX_VALUE_BYTES + 1)}}, "longer"),
        (lambda r: {**r, "row": {**r["row"], "confidence": float("nan")}}, "finite"),
        (lambda r: {**r, "row": {k: v for k, v in r["row"].items() if k != "content"}}, "missing"),
        (lambda r: {**r, "row": {**r["row"], "status": "bogus"}}, "refused a row"),
    ],
)
async def test_a_bad_record_anywhere_writes_nothing(
    kernel: MemoryKernel, change: Any, message: str
) -> None:
    await _fill(kernel, AGENT)
    exported = await _export(kernel, AGENT)
    last_fact = max(i for i, r in enumerate(exported) if r["table"] == "facts")
    records = [change(r) if i == last_fact else r for i, r in enumerate(exported)]

    with pytest.raises(ValidationError, match=message):
        await kernel.import_agent(records, agent_id="agent-copy")
    assert sum((await rows(kernel, "agent-copy")).values()) == 0


async def test_no_records_or_not_records_is_an_error(kernel: MemoryKernel) -> None:
    for records in ([], "facts", None, [None]):
        for agent_id in (None, "agent-copy"):
            with pytest.raises(ValidationError):
                await kernel.import_agent(records, agent_id=agent_id)  # type: ignore[arg-type]


async def test_an_embedder_failure_writes_nothing(
    kernel: MemoryKernel, embedder: FakeEmbedder
) -> None:
    await _fill(kernel, AGENT)
    exported = await _export(kernel, AGENT)
    embedder.fail = RuntimeError("embedder down")
    with pytest.raises(EmbedderError):
        await kernel.import_agent(exported, agent_id="agent-copy")
    embedder.fail = None
    assert sum((await rows(kernel, "agent-copy")).values()) == 0
    await kernel.import_agent(exported, agent_id="agent-copy")  # retried, it goes through
    assert (await rows(kernel, "agent-copy"))["facts"] == 2


async def test_cli_imports_an_export_file(
    kernel: MemoryKernel, pg_dsn: str, drop_schema: str, tmp_path: Path
) -> None:
    await _fill(kernel, AGENT)
    out = tmp_path / "agent.jsonl"
    store = ["--dsn", pg_dsn, "--schema", drop_schema]

    def run(*argv: str) -> Any:
        return CliRunner().invoke(app, list(argv))

    exported = await asyncio.to_thread(run, "export", "--agent", AGENT, "--out", str(out), *store)
    assert exported.exit_code == 0, exported.output
    done = await asyncio.to_thread(run, "import", str(out), "--agent", "agent-copy", *store)
    assert done.exit_code == 0, done.output
    assert "agent-copy" in done.output and "embedded" in done.output
    assert await _export(kernel, "agent-copy") == _as(await _export(kernel, AGENT), "agent-copy")

    broken = tmp_path / "broken.jsonl"
    broken.write_text(out.read_text(encoding="utf-8") + "{not json\n", encoding="utf-8")
    refused = await asyncio.to_thread(run, "import", str(broken), "--agent", "agent-3", *store)
    assert refused.exit_code == 1 and "is not JSON" in refused.output
    assert sum((await rows(kernel, "agent-3")).values()) == 0
    assert json.loads(out.read_text(encoding="utf-8").splitlines()[0])["table"] == "facts"


async def test_turns_waiting_for_extraction_stay_queued_in_the_new_store(
    pg_dsn: str, drop_schema: str, clock: FrozenClock, embedder: FakeEmbedder
) -> None:
    """Before, an export left the extraction queue out: the turns the source had not
    extracted facts from yet were never extracted after a move."""
    config = schema_config(drop_schema, extraction={"worker": False})
    target = schema_config(f"{drop_schema}_q", extraction={"worker": False})
    async with MemoryKernel.open(
        pg_dsn, config=config, clock=clock, embedder=embedder, extractor=RuleExtractor()
    ) as source:
        await exchange(source, AGENT, "My sister Noor works as a nurse in Leeds.")
        exported: Records = await _export(source, AGENT)
        queued = [r for r in exported if r["table"] == "extraction_queue"]
        assert queued and all(r["row"]["claim"] is None for r in queued)
    try:
        async with MemoryKernel.open(
            pg_dsn, config=target, clock=clock, embedder=embedder, extractor=RuleExtractor()
        ) as moved:
            # A queued turn must be one the records hold.
            orphan = [r for r in exported if r["table"] != "turns"]
            with pytest.raises(ValidationError, match="queued turn"):
                await moved.import_agent(orphan)
            report = await moved.import_agent(exported)
            assert report.queued == len(queued) and report.turns == 2
            done = await moved.extract_pending(AGENT)
            assert done.turns == len(queued)
            found = await moved.search_memory(AGENT, "sister Noor nurse", search_type="facts")
            assert any("Noor" in hit.text for hit in found)
    finally:
        engine = create_async_engine(pg_dsn)
        async with engine.begin() as conn:
            await conn.execute(text(f'DROP SCHEMA IF EXISTS "{drop_schema}_q" CASCADE'))
        await engine.dispose()
