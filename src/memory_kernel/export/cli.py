"""``memory-kernel export``: everything stored about an agent, as JSON Lines."""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import nullcontext
from pathlib import Path
from typing import Annotated, Any, TextIO

import typer

from memory_kernel.cli_common import (
    DataDirOption,
    DsnOption,
    SchemaOption,
    console,
    opened,
    run_command,
)
from memory_kernel.export.service import export_agent

__all__ = ["export"]


def export(
    agent: Annotated[str, typer.Option("--agent", help="The agent to export.")],
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Write here (default: standard output).", show_default=False),
    ] = None,
    vectors: Annotated[bool, typer.Option("--vectors", help="Include the embeddings.")] = False,
    dsn: DsnOption = None,
    data_dir: DataDirOption = None,
    schema: SchemaOption = "memory_kernel",
) -> None:
    """Everything stored about an agent, one JSON object a line (docs/privacy.md)."""

    async def run() -> None:
        async with opened(dsn, data_dir, schema) as database:
            with out.open("w", encoding="utf-8") if out else nullcontext(sys.stdout) as sink:
                counts = await _write(export_agent(database, agent, vectors=vectors), sink)
        if out is not None:
            shown = ", ".join(f"{n} {table}" for table, n in counts.items()) or "nothing"
            console.print(f"wrote {out}: {shown}")

    run_command(run())


async def _write(records: AsyncIterator[dict[str, Any]], sink: TextIO) -> Counter[str]:
    counts: Counter[str] = Counter()
    async for record in records:
        sink.write(json.dumps(record, ensure_ascii=False) + "\n")
        counts[record["table"]] += 1
    return counts
