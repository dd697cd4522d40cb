"""The vectors an embedder outage left out: episodes, turns and decisions are stored
without a vector when the embedder is down (``Runtime.embed_or_none``), and facts are queued
(``pending_embed``, the pending phase). This phase gives the others theirs, a batch at a
time, oldest first; each write checks the row still has no vector and the same text. A dry
run counts them (a rehearsal never calls the embedder); a failing embedder is reported, and
the next run tries again.
"""

from __future__ import annotations

from memory_kernel.consolidation import repository
from memory_kernel.consolidation.context import RunContext
from memory_kernel.errors import EmbedderError, InvalidVectorError
from memory_kernel.heart.turns.policy import vector_input
from memory_kernel.models.consolidation import ConsolidationAction as Action
from memory_kernel.models.consolidation import ConsolidationPhase as Phase

__all__ = ["fill_vectors"]

# Rounds per table and run: a bound, in case rows keep arriving while it fills.
_MAX_ROUNDS = 1000


async def fill_vectors(ctx: RunContext) -> None:
    ctx.report(Phase.PENDING)
    for table in repository.VECTORED:
        if ctx.dry_run:
            async with ctx.rt.db.connection() as conn:
                found = await repository.vectorless_count(conn, table, ctx.agent_id)
            ctx.counts[Action.VECTORS_FILLED] += found
            continue
        try:
            await _fill(ctx, table)
        except (EmbedderError, InvalidVectorError) as exc:  # found by words; the next run retries
            ctx.errors.append(f"{table} stored without a vector not embedded: {exc}")
            return


async def _fill(ctx: RunContext, table: str) -> None:
    batch = ctx.cfg.pending_batch
    for _ in range(_MAX_ROUNDS):
        async with ctx.rt.db.connection() as conn:
            rows = await repository.vectorless(conn, table, ctx.agent_id, limit=batch)
        if not rows:
            return
        vectors = await ctx.rt.embed_each([vector_input(table, text) for _, text in rows])
        filled = 0
        async with ctx.rt.db.transaction() as conn:
            for (row_id, text), vector in zip(rows, vectors, strict=True):
                if vector is not None:  # a zero vector has no direction: the row waits
                    filled += await repository.fill_vector(
                        conn, table, ctx.agent_id, row_id, text, vector
                    )
        ctx.counts[Action.VECTORS_FILLED] += filled
        if len(rows) < batch or not filled:
            return
