"""``memory-kernel consolidate``: one agent or all, dry run, the summary table."""

from __future__ import annotations

import asyncio

from typer.testing import CliRunner

from memory_kernel import MemoryKernel
from memory_kernel.cli import app
from memory_kernel.models.enums import FactStatus
from tests.conftest import schema_config
from tests.consolidation.conftest import add_fact, all_facts

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
