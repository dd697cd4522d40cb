"""What the ``memory-kernel`` commands share: the console, the store options, and how a
command runs and fails."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Coroutine
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from memory_kernel.config import MemoryKernelConfig, StorageConfig
from memory_kernel.errors import MemoryKernelError
from memory_kernel.storage.database import Database

if TYPE_CHECKING:
    from memory_kernel.kernel import MemoryKernel

__all__ = [
    "DataDirOption", "DsnOption", "JudgeOption", "SchemaOption", "StoreEmbedderOption",
    "console", "fail", "kernel_opened", "opened", "print_counts", "run_command",
    "storage_config",
]  # fmt: skip

console = Console()

DsnOption = Annotated[
    str | None,
    typer.Option(
        "--dsn",
        envvar="MEMORY_KERNEL_DSN",
        help="PostgreSQL URL; without it the embedded server is used.",
        show_default=False,
    ),
]
DataDirOption = Annotated[
    Path | None,
    typer.Option("--data-dir", help="Data directory of the embedded server.", show_default=False),
]
SchemaOption = Annotated[
    str, typer.Option("--schema", envvar="MEMORY_KERNEL_SCHEMA", help="Postgres schema.")
]


def storage_config(schema: str) -> StorageConfig:
    return MemoryKernelConfig.from_mapping({"storage": {"schema_name": schema}}).storage


def fail(exc: MemoryKernelError) -> typer.Exit:
    console.print(f"[bold red]error:[/] {exc}")
    return typer.Exit(code=1)


def run_command(coroutine: Coroutine[Any, Any, None]) -> None:
    """Run a command's coroutine; library errors become one red line and exit code 1."""
    try:
        asyncio.run(coroutine)
    except MemoryKernelError as exc:
        raise fail(exc) from exc


def print_counts(title: str, report: object, names: tuple[str, ...]) -> None:
    """A table of ``report``'s counts ``names`` (an erasure's, an import's)."""
    table = Table(title=title)
    for name in names:
        table.add_row(name, str(getattr(report, name)))
    console.print(table)


JudgeOption = Annotated[
    str | None,
    typer.Option(
        "--judge",
        help="A judge for the ambiguous cases: openai:<model>@<base_url> (key from "
        "MEMORY_KERNEL_JUDGE_API_KEY or OPENAI_API_KEY)",
        show_default=False,
    ),
]
StoreEmbedderOption = Annotated[
    str,
    typer.Option(
        "--embedder", help="The store's embedder: hybrid (default), hashing, st or st:<model>"
    ),
]


@asynccontextmanager
async def kernel_opened(
    dsn: str | None, data_dir: Path | None, storage: StorageConfig, embedder: str,
    *, serving: bool = False, judge: str | None = None,
) -> AsyncIterator[MemoryKernel]:  # fmt: skip
    """A kernel on the store; ``embedder`` must be the store's. For a one-off command no
    background queue worker (the command drains what it needs itself); ``serving`` (a
    long-running server) keeps it. ``judge``: ``openai:<model>@<base_url>``, a
    ``ChatJudge`` for the kernel, closed with it."""
    from memory_kernel.eval.embedders import embedder_from_name
    from memory_kernel.eval.nightly import judge_opened
    from memory_kernel.kernel import MemoryKernel

    one_off = {} if serving else {"consolidation": {"embed_worker": False}}
    config = MemoryKernelConfig.from_mapping({"storage": storage.model_dump(), **one_off})
    async with (
        judge_opened(judge) as chat,
        MemoryKernel.open(
            dsn, config=config, data_dir=data_dir, embedder=embedder_from_name(embedder),
            judge=chat,
        ) as kernel,
    ):  # fmt: skip
        yield kernel


@asynccontextmanager
async def opened(dsn: str | None, data_dir: Path | None, schema: str) -> AsyncIterator[Database]:
    """The store (pgvector created and the schema migrated if needed), closed after."""
    database = await Database.open(dsn, storage_config(schema), data_dir=data_dir)
    try:
        yield database
    finally:
        await database.close()
