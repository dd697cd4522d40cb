"""``memory-kernel erase`` on a real PostgreSQL: one of --memory, --session, --everything;
a confirmation unless --yes; a wrong id is one red line, exit 1, nothing erased."""

from __future__ import annotations

import asyncio
import uuid

from typer.testing import CliRunner, Result

from memory_kernel import FactInput, MemoryKernel
from memory_kernel.cli import app
from tests.erasure.conftest import exchange, rows

AGENT = "agent-c"


async def _erase(pg_dsn: str, schema: str, *args: str, answer: str | None = None) -> Result:
    argv = ["erase", "--agent", AGENT, *args, "--dsn", pg_dsn, "--schema", schema]
    # The CLI runs its own event loop: give it a thread.
    return await asyncio.to_thread(lambda: CliRunner().invoke(app, argv, input=answer))


async def test_erase_by_id_session_and_everything(
    kernel: MemoryKernel, pg_dsn: str, drop_schema: str
) -> None:
    code = (
        await kernel.heart.facts.learn(FactInput(agent_id=AGENT, content="Locker code is 4411."))
    ).fact.id
    await exchange(kernel, AGENT, "My city is Paris.", session="s1")
    await exchange(kernel, AGENT, "My dog is Rex.", session="s2")

    done = await _erase(pg_dsn, drop_schema, "--memory", str(code), "--yes")
    assert done.exit_code == 0, done.output
    assert "facts" in done.output and (await rows(kernel, AGENT))["facts"] == 0

    declined = await _erase(pg_dsn, drop_schema, "--session", "s1", answer="n\n")
    assert declined.exit_code == 1 and (await rows(kernel, AGENT))["turns"] == 4
    confirmed = await _erase(pg_dsn, drop_schema, "--session", "s1", answer="y\n")
    assert confirmed.exit_code == 0 and (await rows(kernel, AGENT))["turns"] == 2

    wrong = await _erase(pg_dsn, drop_schema, "--memory", str(uuid.uuid4()), "--yes")
    assert wrong.exit_code == 1 and "no memory of this agent" in wrong.output
    both = await _erase(pg_dsn, drop_schema, "--session", "s2", "--everything", "--yes")
    assert both.exit_code == 2

    everything = await _erase(pg_dsn, drop_schema, "--everything", "--yes")
    assert everything.exit_code == 0, everything.output
    assert sum((await rows(kernel, AGENT)).values()) == 0
