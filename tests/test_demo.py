"""``memory-kernel demo``: the scripted session handles every seed problem — asserted on the
outcomes the run computed (and cross-checked against the store), through the CLI, and in
the default mode that starts and removes a temporary embedded server."""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memory_kernel import MemoryKernel
from memory_kernel.cli import app
from memory_kernel.demo import DemoResult, SeedProblem, run_demo
from memory_kernel.demo.script import NOISE_TURNS, SAME_DECISION_TURNS, turns
from memory_kernel.inspection import DecisionState, inspect_agent
from memory_kernel.models.enums import FactStatus, MemoryKind
from memory_kernel.models.turns import SkipReason
from tests.conftest import schema_config

RECALL_NODES = {"facts", "episodic_memory", "decisions"}


async def test_every_seed_problem_is_handled(pg_dsn: str, drop_schema: str) -> None:
    result = await run_demo(dsn=pg_dsn, schema=drop_schema)
    assert [t.key for t in result.turns] == [t.key for t in turns()]
    _check_stale_fact(result)
    _check_episode(result)
    _check_noise(result)
    _check_duplicate_decisions(result)
    _check_greeting(result)
    _check_long_message_update(result)
    _check_totals(result)
    assert {row.problem for row in result.seeds} == set(SeedProblem)
    assert result.all_handled
    await _check_store(pg_dsn, drop_schema, result)


def _check_stale_fact(result: DemoResult) -> None:
    s = result.stale_fact
    assert s.stale_status is FactStatus.SUPERSEDED and s.current_status is FactStatus.ACTIVE
    assert s.superseded_by_current
    assert s.history == (s.stale, s.current)  # history kept, oldest first
    assert s.naive_active_versions == 2 and s.naive_injected_stale
    assert s.kernel_injected_current and not s.kernel_injected_stale


def _check_episode(result: DemoResult) -> None:
    e = result.duplicate_episode
    assert (e.naive_episodes, e.kernel_episodes, e.reused) == (2, 1, True)


def _check_noise(result: DemoResult) -> None:
    n = result.noise
    assert n.naive_noise_stored == len(NOISE_TURNS)
    assert n.kernel_noise_stored == 0
    assert len(n.rejections) == len(NOISE_TURNS)
    for r in n.rejections:  # Brain layer 1, each with its reason
        assert r.layer == 1 and r.skipped is SkipReason.INFORMATIONAL and r.reason
    assert {r.reason for r in n.rejections} >= {"status", "completion"}


def _check_duplicate_decisions(result: DemoResult) -> None:
    d = result.duplicate_decisions
    assert d.at_start.layer == 2 and d.at_start.skipped is SkipReason.DUPLICATE
    assert d.naive_stored == len(SAME_DECISION_TURNS)
    assert d.kernel_stored == len(SAME_DECISION_TURNS) - 1  # the in-session repeat is gone
    assert d.kernel_injected == 1 and d.kernel_deduplicated >= 1
    assert d.naive_injected > d.kernel_injected


def _check_greeting(result: DemoResult) -> None:
    g = result.greeting
    assert g.kernel_memory_fetches == 0
    assert set(g.nodes_skipped) == RECALL_NODES
    assert g.kernel_tokens == 0 and g.naive_tokens > 0 and g.naive_memory_fetches == 1
    hey = next(t for t in result.turns if t.key == "hey")
    assert not RECALL_NODES & set(hey.nodes_fetched)


def _check_long_message_update(result: DemoResult) -> None:
    u = result.long_message_update
    assert u.update_at > 200  # said late in the message, past the old 200-character cut
    assert u.kernel_injected_current and not u.kernel_stale_as_current
    assert u.naive_injected_current and u.naive_stale_as_current  # undated: reads as current
    old, new = (next(line for line in u.kernel_lines if v in line) for v in (u.stale, u.current))
    assert old.startswith("[") and new.startswith("[")  # both dated, the old one first
    assert u.kernel_lines.index(old) < u.kernel_lines.index(new)


def _check_totals(result: DemoResult) -> None:
    t = result.totals
    assert t.naive_tokens == sum(x.naive_tokens for x in result.turns)
    assert t.kernel_tokens == sum(x.kernel_tokens for x in result.turns)
    assert t.tokens_saved == t.naive_tokens - t.kernel_tokens
    assert t.tokens_saved > 0
    assert all(x.kernel_tokens <= result.token_budget for x in result.turns)
    assert t.kernel_current < t.naive_stored
    assert t.turns == len(result.turns)
    assert t.kernel_turns_with_memory_io < t.naive_turns_with_memory_io


async def _check_store(dsn: str, schema: str, result: DemoResult) -> None:
    """What the result claims is what the store holds."""
    async with MemoryKernel.open(dsn, config=schema_config(schema)) as kernel:
        seen = await inspect_agent(kernel.database, result.agent_id, limit=50)
    assert seen.count(MemoryKind.FACT, FactStatus.SUPERSEDED) == 1
    assert seen.count(MemoryKind.DECISION, DecisionState.FINALIZED) == (
        result.duplicate_decisions.kernel_stored
    )
    rejected = {d.rejection_reason for d in seen.rejected_decisions}
    assert {f"informational: {r.reason}" for r in result.noise.rejections} <= rejected
    # post_turn persisted one context report per turn.
    assert len(seen.context_reports) == len(result.turns)


def test_cli_demo_prints_the_comparison_and_writes_json(
    pg_dsn: str, drop_schema: str, tmp_path: Path
) -> None:
    out = tmp_path / "demo.json"
    runner = CliRunner()
    args = ["demo", "--dsn", pg_dsn, "--schema", drop_schema, "--json", str(out)]
    result = runner.invoke(app, args, terminal_width=160)
    assert result.exit_code == 0, result.output
    # The console is 80 columns wide here: look for words that do not wrap.
    for line in ("summary: every seed problem", "tokens saved", "memory fetches", "handled"):
        assert line in result.output
    assert "✗" not in result.output and result.output.count("✓") == len(SeedProblem)
    saved = DemoResult.model_validate(json.loads(out.read_text(encoding="utf-8")))
    assert saved.all_handled
    assert f"{saved.totals.tokens_saved} (" in result.output


@pytest.mark.usefixtures("pg_dsn")
async def test_default_mode_uses_and_removes_a_temporary_store(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A short parent: the embedded server puts its Unix socket in the data directory, and
    # socket paths are limited to ~100 bytes (pytest's tmp_path can be longer).
    parent = Path(tempfile.mkdtemp(prefix="mk-"))
    try:
        monkeypatch.delenv("MEMORY_KERNEL_DSN", raising=False)
        monkeypatch.setattr(tempfile, "tempdir", str(parent))
        result = await run_demo()
        assert result.all_handled
        assert result.store_removed and str(parent) in result.store
        leftovers = await asyncio.to_thread(lambda: list(parent.iterdir()))
        assert leftovers == []  # nothing left behind
    finally:
        shutil.rmtree(parent, ignore_errors=True)
