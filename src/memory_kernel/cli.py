"""The ``memory-kernel`` command, for people."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from memory_kernel.cli_common import (
    DataDirOption,
    DsnOption,
    JudgeOption,
    SchemaOption,
    StoreEmbedderOption,
    console,
    fail,
    opened,
    run_command,
    storage_config,
)
from memory_kernel.config import MemoryKernelConfig
from memory_kernel.erasure.cli import erase
from memory_kernel.errors import MemoryKernelError
from memory_kernel.export.cli import export
from memory_kernel.restore.cli import import_
from memory_kernel.storage.database import ServerInfo
from memory_kernel.storage.embedded import default_data_dir
from memory_kernel.storage.url import redact_dsn

app = typer.Typer(
    name="memory-kernel",
    help="Long-term memory for AI agents that stays clean.",
    no_args_is_help=True,
    add_completion=False,
)


async def _server_info(
    dsn: str | None, data_dir: Path | None, schema: str
) -> tuple[ServerInfo, str]:
    """Open the store (creating pgvector and migrating), describe it, close it."""
    async with opened(dsn, data_dir, schema) as database:
        server = database.server
        where = f"embedded ({server.data_dir})" if server else redact_dsn(dsn or "")
        return await database.server_info(), where


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

    run_command(run())


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

    run_command(run())


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
    embedder: StoreEmbedderOption = "hybrid",
    judge: JudgeOption = None,
) -> None:
    """Nightly maintenance: evidence, decay, contradictions, merging, deprecation; with
    --judge, the ambiguous cases and the decision gate's uncertain band go to it."""
    from memory_kernel.consolidation.cli import run_consolidate

    if (agent is None) == (not all_agents):
        console.print("[bold red]error:[/] give exactly one of --agent A or --all")
        raise typer.Exit(code=2)
    try:
        asyncio.run(
            run_consolidate(
                console, dsn=dsn, data_dir=data_dir, storage=storage_config(schema), agent=agent,
                dry_run=dry_run, concurrency=concurrency, embedder=embedder, judge=judge,
            )
        )  # fmt: skip
    except MemoryKernelError as exc:
        raise fail(exc) from exc


EmbedderOption = Annotated[
    str,
    typer.Option(
        "--embedder",
        help="hashing, hybrid, static, st, st:<model> or openai:<model>@<base_url>(#<dim>)",
    ),
]
JsonOption = Annotated[
    Path | None,
    typer.Option("--json", help="Also write the report as JSON here.", show_default=False),
]
PlotOption = Annotated[
    Path | None,
    typer.Option(
        "--plot",
        help="Also draw the curve as a PNG here (needs the plot extra).",
        show_default=False,
    ),
]


@app.command()
def demo(
    data_dir: Annotated[
        Path | None,
        typer.Option("--data-dir", help="Keep the embedded store here.", show_default=False),
    ] = None,
    dsn: Annotated[
        str | None,
        typer.Option("--dsn", help="Run on this PostgreSQL instead.", show_default=False),
    ] = None,
    schema: Annotated[
        str, typer.Option("--schema", help="Postgres schema.")
    ] = "memory_kernel_demo",
    json_path: Annotated[
        Path | None, typer.Option("--json", help="Also write the results as JSON here.")
    ] = None,
) -> None:
    """Play a scripted agent session against memory-kernel and a naive memory, side by side."""
    from memory_kernel.demo import render_demo, run_demo

    if dsn is None and data_dir is None:
        console.print(
            "[dim]using a temporary data directory for an embedded PostgreSQL (removed at "
            "the end; --data-dir DIR keeps it)[/]"
        )
    try:
        result = asyncio.run(run_demo(dsn=dsn, data_dir=data_dir, schema=schema))
    except MemoryKernelError as exc:
        raise fail(exc) from exc
    render_demo(result, console)
    if json_path is not None:
        json_path.write_text(result.model_dump_json(indent=2), encoding="utf-8")
        console.print(f"[dim]wrote {json_path}[/]")
    if not result.all_handled:
        raise typer.Exit(code=1)


@app.command("inspect")
def inspect_(
    agent: Annotated[str, typer.Option("--agent", help="The agent to inspect.")],
    dsn: DsnOption = None,
    data_dir: DataDirOption = None,
    schema: SchemaOption = "memory_kernel",
    limit: Annotated[int, typer.Option("--limit", min=1, max=1000, help="Rows per list.")] = 10,
) -> None:
    """What an agent remembers: counts, fact chains, rejected decisions, context reports."""
    from memory_kernel.inspection import inspect_agent
    from memory_kernel.inspection_render import render_inspection

    async def run() -> None:
        async with opened(dsn, data_dir, schema) as database:
            result = await inspect_agent(database, agent, limit=limit)
        render_inspection(result, console)

    run_command(run())


app.command()(erase)
app.command()(export)
app.command(name="import")(import_)


@app.command("mcp")
def mcp_(
    agent: Annotated[str, typer.Option("--agent", help="The agent whose memory is served.")],
    allow_forget: Annotated[
        bool,
        typer.Option("--allow-forget", help="Offer forget_memory (erasure cannot be undone)."),
    ] = False,
    dsn: DsnOption = None,
    data_dir: DataDirOption = None,
    schema: SchemaOption = "memory_kernel",
    embedder: StoreEmbedderOption = "hybrid",
) -> None:
    """Serve an agent's memory to an MCP client over stdio (the mcp extra)."""
    try:
        from memory_kernel.mcp_server import serve_stdio
    except ModuleNotFoundError as exc:
        # Standard output is the protocol's: say it on standard error.
        Console(stderr=True).print(
            f"[bold red]error:[/] {exc.name} is missing: pip install 'memory-kernel[mcp]'"
        )
        raise typer.Exit(code=1) from exc
    run_command(
        serve_stdio(
            agent_id=agent, dsn=dsn, data_dir=data_dir, storage=storage_config(schema),
            embedder=embedder, forget=allow_forget,
        )
    )  # fmt: skip


@app.command("eval")
def eval_(
    suite: Annotated[
        str, typer.Argument(help="ku, dedup, admission, gate, stsb, locomo or conversations")
    ],
    data: Annotated[Path, typer.Option("--data", help="The data file of the suite.")],
    embedder: EmbedderOption = "hybrid",
    json_path: JsonOption = None,
    plot: PlotOption = None,
    budget: Annotated[
        int | None,
        typer.Option(
            "--budget",
            min=1,
            help="conversations: context tokens per question [default: 1000]",
            show_default=False,
        ),
    ] = None,
    limit: Annotated[
        int | None,
        typer.Option(
            "--limit",
            min=1,
            help="conversations: only the first N conversations",
            show_default=False,
        ),
    ] = None,
    contexts: Annotated[
        Path | None,
        typer.Option(
            "--contexts",
            help="conversations: also write each question's contexts (ours, naive) as JSONL",
            show_default=False,
        ),
    ] = None,
    extractor: Annotated[
        str | None,
        typer.Option(
            "--extractor",
            help="conversations: none, rules or openai:<model>@<base_url> (facts extracted "
            "from the turns; MEMORY_KERNEL_EXTRACTOR_API_KEY, _RESPONSE_FORMAT, _MAX_TOKENS) "
            "[default: none]",
            show_default=False,
        ),
    ] = None,
    judge: Annotated[
        str | None,
        typer.Option(
            "--judge",
            help="dedup, gate, ku: also consolidate with this judge (each pair learn kept "
            "apart; each gate agent after its replay; each ku agent after learning), "
            "openai:<model>@<base_url> (key from MEMORY_KERNEL_JUDGE_API_KEY or "
            "OPENAI_API_KEY; MEMORY_KERNEL_JUDGE_RESPONSE_FORMAT json_object, json_schema "
            "or none; MEMORY_KERNEL_JUDGE_MAX_TOKENS); with --folds, each held-out fold too",
            show_default=False,
        ),
    ] = None,
    folds: Annotated[
        int | None,
        typer.Option(
            "--folds",
            help="Also cross-validate: K stratified folds, fit on K-1, report the held-out one.",
            show_default=False,
        ),
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the fold split.")] = 0,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            help="admission, dedup, gate, ku: measure this JSON configuration (as `memory-kernel"
            " config` prints) instead of the defaults; with --folds, each fold's fitted weights"
            " or threshold replace its own",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Measure memory quality on an evaluation data set (see shared/eval/README.md)."""
    from memory_kernel.eval.cli import run_eval

    try:
        run_eval(
            console, suite=suite, data=data, embedder=embedder, json_path=json_path, plot=plot,
            options={"budget": budget, "limit": limit, "contexts": contexts,
                     "extractor": extractor, "judge": judge, "config": config}, folds=folds,
            seed=seed,
        )  # fmt: skip
    except MemoryKernelError as exc:
        raise fail(exc) from exc


@app.command()
def tune(
    suite: Annotated[str, typer.Argument(help="dedup, gate or stsb")],
    data: Annotated[Path, typer.Option("--data", help="The data file of the suite.")],
    embedder: EmbedderOption = "hybrid",
    param: Annotated[
        str | None,
        typer.Option(
            "--param",
            help="section.field to sweep, or cosine (raw cosine alone).",
            show_default=False,
        ),
    ] = None,
    values: Annotated[
        str | None,
        typer.Option(
            "--values", help="start:stop:step (stop included) or a,b,c.", show_default=False
        ),
    ] = None,
    json_path: JsonOption = None,
    plot: PlotOption = None,
) -> None:
    """Sweep one threshold of a suite: precision/recall/F1 per value and the best value."""
    from memory_kernel.eval.cli import run_tune

    try:
        run_tune(
            console, suite=suite, data=data, embedder=embedder, param=param, values=values,
            json_path=json_path, plot=plot,
        )  # fmt: skip
    except MemoryKernelError as exc:
        raise fail(exc) from exc


@app.command("config")
def config_(
    markdown: Annotated[
        bool,
        typer.Option("--markdown", help="The configuration reference (docs/configuration.md)."),
    ] = False,
    file: Annotated[
        Path | None,
        typer.Option(
            "--file", help="Show this JSON configuration file, validated.", show_default=False
        ),
    ] = None,
) -> None:
    """Show the configuration: every field with its default (JSON), or the reference."""
    from memory_kernel.config_reference import config_json, render_markdown

    try:
        loaded = MemoryKernelConfig.from_file(file) if file else MemoryKernelConfig()
    except MemoryKernelError as exc:
        raise fail(exc) from exc
    typer.echo(render_markdown() if markdown else config_json(loaded), nl=False)


if __name__ == "__main__":  # pragma: no cover
    app()
