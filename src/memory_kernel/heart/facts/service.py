"""``kernel.heart.facts``: learn (admission, dedup, supersession, contradictions), search,
history, as-of views, and the embedding of facts that were stored without a vector."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime

import numpy as np
from sqlalchemy.ext.asyncio import AsyncConnection

from memory_kernel.errors import (
    EmbedderError,
    InvalidVectorError,
    NotFoundError,
    ValidationError,
)
from memory_kernel.heart.facts import repository as repo
from memory_kernel.heart.facts.admission import admit_fact
from memory_kernel.heart.facts.batch import learn_batch
from memory_kernel.heart.facts.batch_state import Prepared
from memory_kernel.heart.facts.normalise import features
from memory_kernel.heart.facts.pending import PendingReport, embed_pending
from memory_kernel.heart.facts.relation import RelationThresholds
from memory_kernel.models.enums import FactStatus
from memory_kernel.models.facts import Fact, FactInput, FactMatch, FactSearchHit, LearnOutcome
from memory_kernel.runtime import Runtime
from memory_kernel.similarity import normalise_subject, text_overlap
from memory_kernel.storage.search import nearest
from memory_kernel.storage.tables import facts
from memory_kernel.validation import check_agent_id, check_text, check_unit_interval

__all__ = ["FactService"]

# Facts decided per chunk in learn_many: bounds the in-memory similarity matrix.
_BATCH = 1000
_MAX_QUERY_BYTES = 16 * 1024
_MAX_CHAIN_HOPS = 10_000


class FactService:
    """Facts of every agent. Every method takes the agent id; nothing crosses agents."""

    def __init__(self, runtime: Runtime) -> None:
        self._rt = runtime

    # -- learning -----------------------------------------------------------------------

    async def learn(self, fact: FactInput) -> LearnOutcome:
        """Store ``fact`` unless it duplicates a current one; retire what it replaces."""
        return (await self.learn_many([fact]))[0]

    async def learn_many(self, batch: Sequence[FactInput]) -> list[LearnOutcome]:
        """The same as calling :meth:`learn` for each fact in order, in far fewer round trips.
        All or nothing: one transaction, decided in chunks of 1000 facts (which bounds the
        in-memory similarity matrix); embedding happens before the transaction opens."""
        chunks = [await self._prepare(batch[i : i + _BATCH]) for i in range(0, len(batch), _BATCH)]
        outcomes: list[LearnOutcome] = []
        # Our own transaction: the locks and planner settings travel with BEGIN, and its
        # SET LOCAL settings end with it.
        opening = repo.opening(f.agent_id for f in batch)
        async with self._rt.db.lean_transaction(opening) as conn:
            for prepared in chunks:
                outcomes += await self._write(conn, prepared, restore=False, locked=True)
        # New facts of promoted agents wait, staged, for the index worker.
        self._rt.db.staged.note("facts", {f.agent_id for f in batch})
        return outcomes

    async def learn_in(self, conn: AsyncConnection, fact: FactInput) -> LearnOutcome:
        """:meth:`learn` inside the caller's transaction (e.g. one ``post_turn``)."""
        return (await self.learn_many_in(conn, [fact]))[0]

    async def learn_many_in(
        self, conn: AsyncConnection, batch: Sequence[FactInput]
    ) -> list[LearnOutcome]:
        outcomes = await self._write(conn, await self._prepare(batch), restore=True)
        # Noted before the caller commits: a round that finds nothing yet leaves them to
        # the worker's next sweep.
        self._rt.db.staged.note("facts", {f.agent_id for f in batch})
        return outcomes

    async def _write(
        self,
        conn: AsyncConnection,
        prepared: list[Prepared],
        *,
        restore: bool,
        locked: bool = False,
    ) -> list[LearnOutcome]:
        cfg = self._rt.config.heart
        return await learn_batch(
            conn,
            prepared,
            now=self._rt.clock.now(),
            thresholds=self.thresholds(),
            k=cfg.fact_neighbours,
            restore=restore,
            locked=locked,
        )

    def thresholds(self) -> RelationThresholds:
        cfg = self._rt.config.heart
        return RelationThresholds(
            dedup_similarity=cfg.fact_dedup_similarity,
            dedup_coverage=cfg.fact_dedup_coverage,
            dedup_max_novel=cfg.fact_dedup_max_novel_words,
            update_similarity=cfg.fact_update_similarity,
            update_floor=cfg.fact_update_floor,
            update_shared=cfg.fact_update_shared,
            contradiction_similarity=cfg.fact_contradiction_similarity,
        )

    async def _prepare(self, batch: Sequence[FactInput]) -> list[Prepared]:
        """Validate everything and embed the admitted facts (one embedder call) before any
        write; an embedder failure stores them as pending instead of failing the learn."""
        cfg = self._rt.config.heart
        prepared: list[Prepared] = []
        for fact in batch:
            if not isinstance(fact, FactInput):
                raise ValidationError(f"expected FactInput, got {type(fact).__name__}")
            check_text(fact.content, field="content", max_bytes=cfg.max_content_bytes)
            prepared.append(
                Prepared(
                    input=fact,
                    subject_key=normalise_subject(fact.subject),
                    features=features(fact.content),
                    admission=admit_fact(fact.content, explicit=fact.explicit),
                    confidence=(
                        cfg.default_confidence if fact.confidence is None else fact.confidence
                    ),
                )
            )
        wanted = [p for p in prepared if p.admission.admitted and not p.input.defer_embedding]
        if wanted:
            try:
                vectors = await self._rt.embed([p.input.content for p in wanted])
            except (EmbedderError, InvalidVectorError):
                # Down, slow or answering garbage (NaN, wrong dimension): store the facts as
                # pending_embed rather than lose them; embed_pending catches up.
                return prepared
            for p, vector in zip(wanted, vectors, strict=True):
                # A text without words embeds to zero: it cannot be searched by vector.
                p.vector = vector if float(np.linalg.norm(vector)) > 0.0 else None
        return prepared

    async def embed_pending(
        self, agent_id: str | None = None, *, limit: int = 500
    ) -> PendingReport:
        """Embed facts stored without a vector and run the dedup / value-change /
        contradiction checks for them (consolidation calls this)."""
        if agent_id is not None:
            check_agent_id(agent_id)
        if limit < 1:
            raise ValidationError("limit must be at least 1")
        return await embed_pending(self._rt, self.thresholds(), agent_id=agent_id, limit=limit)

    # -- reading ------------------------------------------------------------------------

    async def get(self, fact_id: uuid.UUID, *, agent_id: str) -> Fact:
        check_agent_id(agent_id)
        async with self._rt.db.connection() as conn:
            found = await repo.by_ids(conn, agent_id, [fact_id])
        if not found:
            raise NotFoundError(f"no fact {fact_id} for this agent")
        return found[0]

    async def search(
        self, agent_id: str, query: str, *, k: int = 10, min_confidence: float = 0.0
    ) -> list[FactSearchHit]:
        """Current facts most similar to ``query``: vector hits (cosine), plus facts still
        waiting for a vector found by full text (scored by word overlap). Superseded, merged,
        deprecated and rejected facts are never returned."""
        check_agent_id(agent_id)
        check_text(query, field="query", max_bytes=_MAX_QUERY_BYTES)
        check_unit_interval(min_confidence, field="min_confidence")
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 1000:
            raise ValidationError("k must be an integer between 1 and 1000")
        try:
            vector: np.ndarray | None = (await self._rt.embed([query]))[0]
        except (EmbedderError, InvalidVectorError):
            vector = None  # the text index still answers
        hits: list[FactSearchHit] = []
        async with self._rt.db.connection() as conn:
            if vector is not None and float(np.linalg.norm(vector)) > 0.0:
                rows = await nearest(
                    conn, facts, agent_id=agent_id, vector=vector, k=k,
                    where=[facts.c.confidence >= min_confidence], columns=repo.FACT_COLUMNS,
                )  # fmt: skip
                hits += [
                    FactSearchHit(fact=repo.to_fact(r), similarity=1.0 - float(r.distance),
                                  matched_by=FactMatch.VECTOR)
                    for r in rows
                ]  # fmt: skip
                statuses: tuple[str, ...] = (FactStatus.PENDING_EMBED.value,)
            else:
                statuses = repo.CURRENT
            rows = await repo.text_search(
                conn, agent_id, query, statuses=statuses, k=k, min_confidence=min_confidence
            )
        seen = {h.fact.id for h in hits}
        hits += [
            FactSearchHit(fact=repo.to_fact(r), similarity=text_overlap(query, r.content),
                          matched_by=FactMatch.TEXT)
            for r in rows if r.id not in seen
        ]  # fmt: skip
        hits.sort(key=lambda h: -h.similarity)
        return hits[:k]

    async def history(self, fact_id: uuid.UUID, *, agent_id: str) -> list[Fact]:
        """The supersession chain ``fact_id`` belongs to (both directions), oldest first."""
        check_agent_id(agent_id)
        async with self._rt.db.connection() as conn:
            chain = {f.id: f for f in await repo.by_ids(conn, agent_id, [fact_id])}
            if not chain:
                raise NotFoundError(f"no fact {fact_id} for this agent")
            frontier = list(chain)
            for _ in range(_MAX_CHAIN_HOPS):
                if not frontier:
                    break
                step = [repo.to_fact(r) for r in await repo.chain_step(conn, agent_id, frontier)]
                frontier = [f.id for f in step if f.id not in chain]
                chain.update({f.id: f for f in step})
        return sorted(chain.values(), key=lambda f: (f.valid_from, f.created_at, str(f.id)))

    async def as_of(self, agent_id: str, when: datetime) -> list[Fact]:
        """The facts that were valid at ``when`` (timezone-aware), oldest first."""
        check_agent_id(agent_id)
        if not isinstance(when, datetime) or when.tzinfo is None:
            raise ValidationError("when must be a timezone-aware datetime")
        async with self._rt.db.connection() as conn:
            return await repo.as_of(conn, agent_id, when)
