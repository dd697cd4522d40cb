"""``memory-kernel erase``: forget memories by id, a conversation, or everything of an
agent, from the command line (the kernel's ``forget``, ``forget_session``, ``erase_agent``)."""

from __future__ import annotations

from typing import Annotated

import typer

from memory_kernel.cli_common import (
    DataDirOption,
    DsnOption,
    SchemaOption,
    StoreEmbedderOption,
    console,
    kernel_opened,
    print_counts,
    run_command,
    storage_config,
)
from memory_kernel.models.erasure import ErasureReport

__all__ = ["erase"]

_SHOWN = (
    "facts", "episodes", "remade", "turns", "decisions", "events", "bookkeeping", "partitions",
)  # fmt: skip


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
    embedder: StoreEmbedderOption = "hybrid",
) -> None:
    """Erase memories for good, with what derives from them (docs/privacy.md). The episode
    of an erased turn gets its summary made again, embedded with ``--embedder``."""
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
        async with kernel_opened(dsn, data_dir, storage_config(schema), embedder) as kernel:
            report: ErasureReport
            if memory:
                report = await kernel.forget(agent, memory)
            elif session is not None:
                report = await kernel.forget_session(agent, session)
            else:
                report = await kernel.erase_agent(agent)
        print_counts(f"erased from agent {agent}", report, _SHOWN)

    run_command(run())
