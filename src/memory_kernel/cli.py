"""The ``memory-kernel`` command, for people."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from memory_kernel.config import MemoryKernelConfig, StorageConfig
from memory_kernel.errors import ConfigError, MemoryKernelError
from memory_kernel.storage.database import Database, ServerInfo
from memory_kernel.storage.embedded import default_data_dir
from memory_kernel.storage.url import redact_dsn

app = typer.Typer(
    name="memory-kernel",
    help="Long-term memory for AI agents that stays clean.",
    no_args_is_help=True,
    add_completion=False,
)
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


def _storage(schema: str) -> StorageConfig:
    return MemoryKernelConfig.from_mapping({"storage": {"schema_name": schema}}).storage


def _fail(exc: MemoryKernelError) -> typer.Exit:
    console.print(f"[bold red]error:[/] {exc}")
    return typer.Exit(code=1)


def _run(coroutine: Coroutine[Any, Any, None]) -> None:
    """Run a command's coroutine; library errors become one red line and exit code 1."""
    try:
        asyncio.run(coroutine)
    except MemoryKernelError as exc:
        raise _fail(exc) from exc


async def _server_info(
    dsn: str | None, data_dir: Path | None, schema: str
) -> tuple[ServerInfo, str]:
    """Open the store (creating pgvector and migrating), describe it, close it."""
    database = await Database.open(dsn, _storage(schema), data_dir=data_dir)
    try:
        server = database.server
        where = f"embedded ({server.data_dir})" if server else redact_dsn(dsn or "")
        return await database.server_info(), where
    finally:
        await database.close()


@app.command()
def doctor(
    dsn: DsnOption = None,
    data_dir: DataDirOption = None,
    schema: SchemaOption = "memory_kernel",
) -> None:
    """Check the database: versions, schema revision, embedder, data directory."""

    async def run() -> None:
        info, where = await _server_info(dsn, data_dir, schema)
        table = Table(title="memory-kernel doctor", show_header=False)
        table.add_column("check", style="bold")
        table.add_column("value")
        table.add_row("database", where)
        table.add_row("PostgreSQL", info.postgres_version)
        table.add_row("pgvector", info.pgvector_version or "[red]missing[/]")
        table.add_row("schema", f"{schema} @ revision {info.schema_revision}")
        embedder = (
            f"{info.embedder_name} (dim {info.embedder_dim})"
            if info.embedder_name
            else "none yet (recorded on first open)"
        )
        table.add_row("embedder", embedder)
        table.add_row("default data dir", str(default_data_dir()))
        console.print(table)
        console.print("[green]ok[/]: the store is reachable and migrated")

    _run(run())


@app.command()
def migrate(
    dsn: DsnOption = None,
    data_dir: DataDirOption = None,
    schema: SchemaOption = "memory_kernel",
) -> None:
    """Create the pgvector extension if needed and migrate the schema to head."""

    async def run() -> None:
        info, _ = await _server_info(dsn, data_dir, schema)
        console.print(f"[green]migrated[/]: schema {schema} at revision {info.schema_revision}")

    _run(run())


@app.command()
def consolidate(
    dsn: DsnOption = None,
    data_dir: DataDirOption = None,
    schema: SchemaOption = "memory_kernel",
    agent: Annotated[
        str | None, typer.Option("--agent", help="Consolidate this agent only.", show_default=False)
    ] = None,
    all_agents: Annotated[bool, typer.Option("--all", help="Consolidate every agent.")] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Report what would change; write nothing.")
    ] = False,
    concurrency: Annotated[int, typer.Option("--concurrency", min=1, help="Agents at once.")] = 2,
    embedder: Annotated[
        str, typer.Option("--embedder", help="The store's embedder: hashing, st or st:<model>")
    ] = "hashing",
) -> None:
    """Nightly maintenance: evidence, decay, contradictions, merging, deprecation."""
    from memory_kernel.consolidation.cli import run_consolidate

    if (agent is None) == (not all_agents):
        console.print("[bold red]error:[/] give exactly one of --agent A or --all")
        raise typer.Exit(code=2)
    try:
        asyncio.run(
            run_consolidate(
                console, dsn=dsn, data_dir=data_dir, storage=_storage(schema), agent=agent,
                dry_run=dry_run, concurrency=concurrency, embedder=embedder,
            )
        )  # fmt: skip
    except MemoryKernelError as exc:
        raise _fail(exc) from exc


@app.command("eval")
def eval_(
    suite: Annotated[str, typer.Argument(help="ku, dedup, admission, gate, stsb or locomo")],
    data: Annotated[Path, typer.Option("--data", help="The data file of the suite.")],
    embedder: Annotated[
        str, typer.Option("--embedder", help="hashing, st or st:<model name or path>")
    ] = "hashing",
    json_path: Annotated[
        Path | None, typer.Option("--json", help="Also write the report as JSON here.")
    ] = None,
) -> None:
    """Measure memory quality on an evaluation data set (see shared/eval/README.md)."""
    from memory_kernel.eval.embedders import embedder_from_name
    from memory_kernel.eval.report import print_report, write_json
    from memory_kernel.eval.suites import load_suite

    try:
        runner = load_suite(suite)
        chosen = embedder_from_name(embedder)
        if not data.exists():
            raise ConfigError(f"no such data file: {data}")
        console.print(f"[dim]suite {suite} · embedder {chosen.name} · data {data}[/]")
        report = asyncio.run(runner(data, chosen))
    except MemoryKernelError as exc:
        raise _fail(exc) from exc
    print_report(report, console)
    if json_path is not None:
        write_json(report, json_path)
        console.print(f"[dim]wrote {json_path}[/]")


if __name__ == "__main__":  # pragma: no cover
    app()
