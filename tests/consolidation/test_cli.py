"""``memory-kernel consolidate``: one agent or all, dry run, the summary table, a judge."""

from __future__ import annotations

import asyncio
import json
import uuid

from typer.testing import CliRunner

from memory_kernel import MemoryKernel, TurnInput, TurnOutcome
from memory_kernel.cli import app
from memory_kernel.models.enums import FactStatus
from tests.conftest import schema_config
from tests.consolidation.conftest import add_fact, all_facts
from tests.gate_texts import DECISION_REJECTED, NOISE_RECORDED
from tests.httpserver import Reply, Request, chat_reply, serve
from tests.judge_checks import CHECKS

DUPES = ("The billing service stores snapshots in bucket archive-7.",
         "The billing service stores snapshots in bucket archive-7")  # fmt: skip


async def _seed(dsn: str, schema: str) -> None:
    config = schema_config(schema, consolidation={"embed_worker": False})
    async with MemoryKernel.open(dsn, config=config) as kernel:
        for agent in ("cli-a", "cli-b"):
            for text in DUPES:
                await add_fact(kernel, agent, text)


async def _statuses(dsn: str, schema: str, agent: str) -> list[FactStatus]:
    async with MemoryKernel.open(dsn, config=schema_config(schema)) as kernel:
        return sorted(f.status for f in await all_facts(kernel, agent))


def test_consolidate_command(pg_dsn: str, drop_schema: str) -> None:
    asyncio.run(_seed(pg_dsn, drop_schema))
    runner = CliRunner()
    base = ["consolidate", "--dsn", pg_dsn, "--schema", drop_schema]
    missing = runner.invoke(app, base)
    assert missing.exit_code == 2 and "exactly one" in missing.output
    dry = runner.invoke(app, [*base, "--agent", "cli-a", "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert "dry run" in dry.output and "merged" in dry.output
    assert asyncio.run(_statuses(pg_dsn, drop_schema, "cli-a")) == [FactStatus.ACTIVE] * 2
    real = runner.invoke(app, [*base, "--all"])
    assert real.exit_code == 0, real.output
    assert "cli-a" in real.output and "cli-b" in real.output and "done" in real.output
    for agent in ("cli-a", "cli-b"):
        statuses = asyncio.run(_statuses(pg_dsn, drop_schema, agent))
        assert statuses == sorted([FactStatus.ACTIVE, FactStatus.MERGED])


async def _seed_gate(dsn: str, schema: str) -> list[uuid.UUID]:
    """Two deliberating turns in layer 1's uncertain band: a decision it rejected, noise it
    recorded."""
    ids = []
    async with MemoryKernel.open(dsn, config=schema_config(schema)) as kernel:
        for session, response in (("s1", DECISION_REJECTED), ("s2", NOISE_RECORDED)):
            turn = TurnInput(
                agent_id="cli-g", session_id=session, message="Go on.", frame="decision"
            )
            ctx = await kernel.pre_turn(turn)
            await kernel.post_turn(ctx.turn, TurnOutcome(response_text=response))
            assert ctx.turn.decision_id is not None
            ids.append(ctx.turn.decision_id)
    return ids


async def _active(dsn: str, schema: str, ids: list[uuid.UUID]) -> list[bool]:
    async with MemoryKernel.open(dsn, config=schema_config(schema)) as kernel:
        return [(await kernel.brain.get(i, agent_id="cli-g")).active for i in ids]


def _answer(request: Request) -> Reply:
    answered = json.loads(request.json()["messages"][1]["content"])["agent_answered"]
    made = CHECKS.get(answered, answered == DECISION_REJECTED)
    verdict = {"is_decision": made, "reason": "read by the test"}
    return chat_reply(json.dumps(verdict))


def test_consolidate_command_with_a_judge(pg_dsn: str, drop_schema: str) -> None:
    ids = asyncio.run(_seed_gate(pg_dsn, drop_schema))
    assert asyncio.run(_active(pg_dsn, drop_schema, ids)) == [False, True]
    base = ["consolidate", "--dsn", pg_dsn, "--schema", drop_schema, "--agent", "cli-g"]
    with serve(_answer) as server:
        result = CliRunner().invoke(app, [*base, "--judge", f"openai:tiny@{server.url}/v1"])
        assert result.exit_code == 0, result.output
        assert len(server.requests) == 2 + len(CHECKS)  # the band, and the checks
    assert "judge calls 1" in result.output
    assert asyncio.run(_active(pg_dsn, drop_schema, ids)) == [True, False]
    bad = CliRunner().invoke(app, [*base, "--judge", "gpt-4o"])
    assert bad.exit_code != 0 and "openai:<model>@<base_url>" in bad.output
