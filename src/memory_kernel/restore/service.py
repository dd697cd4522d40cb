"""Import: an agent's export written into a store — to move an agent from the embedded
server to your PostgreSQL, to another schema, or to copy it under another agent id.

The records are what ``export_agent`` gives (``policy``); they are read, checked and
written in batches, all in one transaction: a bad record anywhere writes nothing. The
target agent must have no rows yet (an import never mixes two histories), and is held
against consolidation and episode starts and ends while the import runs. Ids, times,
versions and the audit trail are kept as they were; each memory's vector is made again by
the importing kernel's embedder (``pending_embed`` facts are left to the embedding worker);
if it fails, nothing is written. Turns the source had not extracted facts from yet stay
queued for the importing kernel's extractor.
"""

from __future__ import annotations

import uuid
from collections import Counter, defaultdict
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterable
from typing import Any

from memory_kernel.errors import ValidationError
from memory_kernel.heart.facts import store as facts_store
from memory_kernel.models.imports import ImportReport
from memory_kernel.restore import policy, store
from memory_kernel.storage import locks
from memory_kernel.storage.database import Database
from memory_kernel.validation import check_agent_id
from memory_kernel.vectors import Vector

__all__ = ["Records", "import_agent"]

#: What ``import_agent`` reads: the records of ``export_agent``, or JSON Lines parsed.
Records = Iterable[object] | AsyncIterable[object]
#: Each text's vector or ``None``, failures raised (``Runtime.embed_each``).
Embed = Callable[[list[str]], Awaitable[list[Vector | None]]]
_BATCH = 500
# The tables whose new rows wait for a promoted agent's index worker.
_STAGED = ("facts", "episodes", "turns")


async def import_agent(
    database: Database, embed: Embed, records: Records, *, agent_id: str | None = None
) -> ImportReport:
    """Write ``records`` (one agent's export) into the store, as ``agent_id`` when given
    (else as the agent they belong to); see the module docstring."""
    target = None if agent_id is None else check_agent_id(agent_id)
    counts: Counter[str] = Counter()
    source: str | None = None
    seen = 0
    turns: set[uuid.UUID] = set()
    queued: set[uuid.UUID] = set()
    async with database.transaction() as conn:
        async for batch in _batches(records):
            rows = []
            for record in batch:
                seen += 1
                row = policy.parse(record, seen)
                if source is None:
                    source, target = row.agent_id, target or row.agent_id
                    await locks.lock_agent_writers(conn, target)
                    await facts_store.lock_agents(conn, [target])
                    if await store.has_rows(conn, target):
                        raise ValidationError(
                            f"agent {target!r} already has memories: import into a new agent "
                            "id (agent_id=…), or erase it first"
                        )
                elif row.agent_id != source:
                    raise ValidationError(
                        f"record {seen}: agent {row.agent_id!r}, not {source!r}: an export "
                        "holds one agent"
                    )
                row.values["agent_id"] = target
                rows.append(row)
            counts["embedded"] += await _embed(embed, rows)
            by_table: defaultdict[str, list[dict[str, Any]]] = defaultdict(list)
            for row in rows:
                by_table[row.table].append(row.values)
            for table, values in by_table.items():
                await store.insert(conn, table, values)
                counts[table] += len(values)
            turns.update(v["id"] for v in by_table.get("turns", []))
            queued.update(v["turn_id"] for v in by_table.get("extraction_queue", []))
        if source is None or target is None:
            raise ValidationError("nothing to import: there are no records")
        if queued - turns:
            raise ValidationError(
                f"{len(queued - turns)} queued turn(s) not among the records' turns: an "
                "export queues only turns it holds"
            )
    for table in _STAGED:
        database.staged.note(table, [target])
    return ImportReport(
        agent_id=target, facts=counts["facts"], episodes=counts["episodes"],
        decisions=counts["decisions"], turns=counts["turns"], events=counts["memory_events"],
        embedded=counts["embedded"], queued=counts["extraction_queue"],
    )  # fmt: skip


async def _embed(embed: Embed, rows: list[policy.Row]) -> int:
    """Give each row with a text its vector; how many got one. The embedder's failure fails
    the import (retry it) rather than write memories only words can find."""
    wanted = [row for row in rows if row.text is not None]
    vectors = await embed([row.text for row in wanted if row.text is not None])
    for row, vector in zip(wanted, vectors, strict=True):
        if vector is not None:
            row.values["embedding"] = vector
    return sum(v is not None for v in vectors)


async def _batches(records: Records) -> AsyncIterator[list[object]]:
    if isinstance(records, str | bytes) or not isinstance(records, Iterable | AsyncIterable):
        raise ValidationError("records must be an iterable of export records")
    batch: list[object] = []
    async for record in _each(records):
        batch.append(record)
        if len(batch) == _BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


async def _each(records: Records) -> AsyncIterator[object]:
    if isinstance(records, AsyncIterable):
        async for record in records:
            yield record
    else:
        for record in records:
            yield record
