"""``memory-kernel erase``: forget memories by id, a conversation, or everything of an
agent, from the command line (the kernel's ``forget``, ``forget_session``, ``erase_agent``)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from memory_kernel.cli_common import (
    DataDirOption,
    DsnOption,
    SchemaOption,
    console,
    opened,
    run_command,
)
from memory_kernel.erasure.service import ErasureService
from memory_kernel.models.erasure import ErasureReport

__all__ = ["erase"]

_SHOWN = ("facts", "episodes", "turns", "decisions", "events", "bookkeeping", "partitions")


def erase(
    agent: Annotated[str, typer.Option("--agent", help="The agent whose memories go.")],
    memory: Annotated[
        list[str] | None,
        typer.Option("--memory", help="A memory id to forget (repeatable).", show_default=False),
    ] = None,
    session: Annotated[
        str | None,
        typer.Option("--session", help="Forget this conversation.", show_default=False),
    ] = None,
    everything: Annotated[
        bool, typer.Option("--everything", help="Erase every row the agent has.")
    ] = False,
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask for confirmation.")] = False,
    dsn: DsnOption = None,
    data_dir: DataDirOption = None,
    schema: SchemaOption = "memory_kernel",
) -> None:
    """Erase memories for good, with what derives from them (docs/privacy.md)."""
    if sum((bool(memory), session is not None, everything)) != 1:
        console.print(
            "[bold red]error:[/] give exactly one of --memory ID…, --session S or --everything"
        )
        raise typer.Exit(code=2)
    what = (
        f"{len(memory)} memory id(s)" if memory
        else f"session {session!r}" if session is not None else "everything"
    )  # fmt: skip
    if not yes and not typer.confirm(f"Erase {what} of agent {agent!r}? This cannot be undone"):
        raise typer.Exit(code=1)

    async def run() -> None:
        async with opened(dsn, data_dir, schema) as database:
            service = ErasureService(database)
            report: ErasureReport
            if memory:
                report = await service.forget(agent, memory)
            elif session is not None:
                report = await service.forget_session(agent, session)
            else:
                report = await service.erase_agent(agent)
        table = Table(title=f"erased from agent {agent}")
        for name in _SHOWN:
            table.add_row(name, str(getattr(report, name)))
        console.print(table)

    run_command(run())
