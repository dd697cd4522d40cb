"""``memory-kernel import``: write an agent's export (``memory-kernel export``) into a store."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Annotated

import typer

from memory_kernel.cli_common import (
    DataDirOption,
    DsnOption,
    SchemaOption,
    StoreEmbedderOption,
    kernel_opened,
    print_counts,
    run_command,
    storage_config,
)
from memory_kernel.errors import ValidationError

__all__ = ["import_"]

_SHOWN = ("facts", "episodes", "decisions", "turns", "events", "embedded")


def import_(
    file: Annotated[
        Path,
        typer.Argument(exists=True, dir_okay=False, help="An export: JSON Lines, one agent's."),
    ],
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent", help="Import as this agent (default: the export's).", show_default=False
        ),
    ] = None,
    dsn: DsnOption = None,
    data_dir: DataDirOption = None,
    schema: SchemaOption = "memory_kernel",
    embedder: StoreEmbedderOption = "hybrid",
) -> None:
    """Write an agent's export into the store, into an agent with no memories yet; each
    vector is made again with --embedder (docs/privacy.md)."""

    async def run() -> None:
        async with kernel_opened(dsn, data_dir, storage_config(schema), embedder) as kernel:
            with file.open(encoding="utf-8") as lines:
                report = await kernel.import_agent(_records(lines), agent_id=agent)
        print_counts(f"imported into agent {report.agent_id}", report, _SHOWN)

    run_command(run())


def _records(lines: Iterable[str]) -> Iterator[object]:
    for n, line in enumerate(lines, 1):
        if line.strip():
            try:
                yield json.loads(line)
            except ValueError as exc:
                raise ValidationError(f"line {n} is not JSON: {exc}") from exc
