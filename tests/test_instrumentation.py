"""The official OpenTelemetry instrumentations of SQLAlchemy and asyncpg run over every hook
and see the library's SQL: there is one database stack, and it is SQLAlchemy's public one."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.instrumentation.asyncpg import AsyncPGInstrumentor
from opentelemetry.instrumentation.sqlalchemy import SQLAlchemyInstrumentor
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from memory_kernel import FactInput, MemoryKernel, TurnInput, TurnOutcome


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    AsyncPGInstrumentor().instrument(tracer_provider=provider)  # type: ignore[no-untyped-call]
    try:
        yield exporter
    finally:
        AsyncPGInstrumentor().uninstrument()  # type: ignore[no-untyped-call]
        SQLAlchemyInstrumentor().uninstrument()


def _statements(found: tuple[ReadableSpan, ...], library: str) -> str:
    return "\n".join(
        str((s.attributes or {}).get("db.statement", ""))
        for s in found
        if s.instrumentation_scope is not None and library in s.instrumentation_scope.name
    )


async def test_every_hook_runs_under_the_official_instrumentations(
    quiet_kernel: MemoryKernel, spans: InMemorySpanExporter
) -> None:
    kernel = quiet_kernel
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    # The instrumentation declares SQLAlchemy < 2.1 and would do nothing on 2.1 without
    # skip_dep_check; its events API is the same in 2.1, and this test proves it works.
    SQLAlchemyInstrumentor().instrument(
        engine=kernel.database.engine.sync_engine, tracer_provider=provider, skip_dep_check=True
    )
    fact = FactInput(agent_id="otel", subject="006 status", content="Spec 006 has shipped")
    learned = await kernel.heart.facts.learn(fact)
    assert learned.action == "added"
    turn = TurnInput(agent_id="otel", session_id="s1", message="What is the status of 006?")
    ctx = await kernel.pre_turn(turn)
    done = await kernel.post_turn(ctx.turn, TurnOutcome(response_text="It has shipped."))
    assert done.episode_id == ctx.turn.episode_id
    hits = await kernel.search_memory("otel", "006 status", search_type="facts")
    assert any("shipped" in h.text for h in hits)
    report = await kernel.consolidate("otel")
    assert report.failed_agents == () and report.skipped_agents == ()

    found = spans.get_finished_spans()
    through_sqlalchemy = _statements(found, "sqlalchemy")
    through_asyncpg = _statements(found, "asyncpg")
    # learn, the episode of the turn, recall and the consolidation's reads: all seen twice,
    # once by each instrumentation.
    for table in ("facts", "episodes", "memory_events"):
        assert table in through_sqlalchemy, table
        assert table in through_asyncpg, table
    assert "pg_advisory_xact_lock" in through_sqlalchemy
