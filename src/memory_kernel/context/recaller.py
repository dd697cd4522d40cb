"""Recall: load hybrid candidates (``retrieval``), then rank, dedup and diversify them with
the pure policy (``recall``). Shared by the passive nodes, the prefetch and the active tool.

Each call opens its own connection, so the engine can run several recalls concurrently.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from sqlalchemy.ext.asyncio import AsyncConnection

from memory_kernel.context import retrieval
from memory_kernel.context.recall import (
    Candidate,
    dedup_decisions,
    diversity_sample,
    rank_candidates,
)
from memory_kernel.errors import EmbedderError, InvalidVectorError
from memory_kernel.models.context import MemoryHit, MemorySource
from memory_kernel.runtime import OFF_LOOP_CHARS, Runtime, off_loop
from memory_kernel.similarity import has_words

__all__ = ["RecallResult", "Recaller"]

_log = logging.getLogger(__name__)
Vector = npt.NDArray[np.float32]
_Key = tuple[str, MemorySource, float, str | None]
# Term statistics (row counts, document frequencies) are reused this long, per agent/table.
_STATS_TTL_S = 30.0
_STATS_MAX = 8192


def _outcome_group(hit: MemoryHit) -> str | None:
    """Diversity clusters decisions of one outcome only; other memories as before."""
    return hit.outcome if hit.source is MemorySource.DECISION else None


@dataclass(frozen=True, slots=True)
class RecallResult:
    hits: list[MemoryHit]
    deduplicated: int = 0  # decisions removed as near-duplicates of a more recent one


class Recaller:
    """Hybrid recall over one agent's facts, episodes or decisions."""

    def __init__(self, runtime: Runtime) -> None:
        self._rt = runtime
        self._cache: OrderedDict[_Key, tuple[float, Any]] = OrderedDict()
        # The words of the last long query: a turn recalls several sources with one query,
        # concurrently, and a 1 MiB message is read once (in a worker thread), not per source.
        self._long_query: tuple[str, asyncio.Future[list[str]]] | None = None

    async def embed_query(self, text: str) -> Vector | None:
        """The query's vector, or ``None`` (no words, embedder down): recall then runs on
        the full-text side alone instead of failing the turn."""
        if not has_words(text):
            return None
        try:
            vector = (await self._rt.embed([text]))[0]
        except (EmbedderError, InvalidVectorError) as exc:
            # A NaN or wrong-size answer is an embedder outage too, not the caller's fault.
            _log.warning("recall without a query vector (full text only): %s", exc)
            return None
        return vector if float(np.linalg.norm(vector)) > 0.0 else None

    async def recall(
        self,
        source: MemorySource,
        *,
        agent_id: str,
        query: str,
        vector: Vector | None,
        limit: int,
        min_confidence: float,
    ) -> RecallResult:
        found = await self._load(source, agent_id, query, vector, min_confidence)
        return self.select(found, limit=limit)

    async def _load(
        self,
        source: MemorySource,
        agent_id: str,
        query: str,
        vector: Vector | None,
        min_confidence: float,
    ) -> list[Candidate]:
        cfg = self._rt.config.context
        words = await self._query_words(query)
        async with self._rt.db.connection() as conn:
            stats = await self._stats(conn, source, agent_id, words, min_confidence)
            return await retrieval.candidates(
                conn,
                source,
                agent_id=agent_id,
                query=query,
                vector=vector,
                k=cfg.candidate_pool,
                min_confidence=min_confidence,
                terms=retrieval.weigh(stats, words),
                episode_confidence=cfg.episode_confidence,
            )

    async def _query_words(self, query: str) -> list[str]:
        if len(query) <= OFF_LOOP_CHARS:
            return retrieval.query_words(query)
        memo = self._long_query
        if memo is None or memo[0] != query:
            work = off_loop(len(query), retrieval.query_words, query)
            memo = self._long_query = (query, asyncio.ensure_future(work))
        # Shielded: one caller cancelled does not cancel the others' shared read.
        return list(await asyncio.shield(memo[1]))

    async def _stats(
        self,
        conn: AsyncConnection,
        source: MemorySource,
        agent_id: str,
        words: list[str],
        min_confidence: float,
    ) -> retrieval.TermStats:
        """Document frequencies, cached for ``_STATS_TTL_S``: they move slowly, and a turn
        (or a burst of turns) would otherwise count the same words again and again."""
        if not words:
            return retrieval.TermStats(rows=0, terms={})
        scope = (agent_id, source, min_confidence)
        now = time.monotonic()
        rows = self._cache_get((*scope, None), now)
        known = {w: v for w in words if (v := self._cache_get((*scope, w), now)) is not None}
        missing = [w for w in words if w not in known]
        if rows is None or missing:
            fresh = await retrieval.term_stats(
                conn, source, agent_id=agent_id, words=missing, min_confidence=min_confidence,
                count_rows=rows is None,
            )  # fmt: skip
            if rows is None:  # N moves slowly and costs a scan of the agent's rows: once a TTL
                rows = fresh.rows
                self._cache_put((*scope, None), rows, now)
            for word, value in fresh.terms.items():
                self._cache_put((*scope, word), value, now)
            known.update(fresh.terms)
        return retrieval.TermStats(rows=int(rows), terms=known)

    def _cache_get(self, key: _Key, now: float) -> Any:
        entry = self._cache.get(key)
        if entry is None or entry[0] < now:
            return None
        return entry[1]

    def _cache_put(self, key: _Key, value: Any, now: float) -> None:
        self._cache[key] = (now + _STATS_TTL_S, value)
        self._cache.move_to_end(key)
        while len(self._cache) > _STATS_MAX:
            self._cache.popitem(last=False)

    def select(self, found: Sequence[Candidate], *, limit: int) -> RecallResult:
        """Rank, dedup decisions (newest of each near-duplicate group), diversify, cut."""
        cfg = self._rt.config.context
        hits = rank_candidates(
            found,
            now=self._rt.clock.now(),
            half_life_days=cfg.recency_half_life_days,
            lexical_weight=cfg.lexical_weight,
            pool=cfg.candidate_pool,
        )
        deduplicated = 0
        decisions = [h for h in hits if h.source is MemorySource.DECISION]
        if decisions:
            kept = dedup_decisions(
                decisions,
                text=lambda h: h.text,
                created_at=lambda h: h.created_at,
                threshold=cfg.decision_overlap,
                outcome=lambda h: h.outcome,
            )
            deduplicated = len(decisions) - len(kept)
            dropped = {h.id for h in decisions} - {h.id for h in kept}
            hits = [h for h in hits if h.id not in dropped]
        vectors = {c.id: c.vector for c in found}
        hits = diversity_sample(
            hits,
            [vectors.get(h.id) for h in hits],
            threshold=cfg.diversity_similarity,
            limit=limit,
            group=_outcome_group,
        )
        return RecallResult(hits=hits, deduplicated=deduplicated)

    async def recall_many(
        self,
        sources: Sequence[MemorySource],
        *,
        agent_id: str,
        query: str,
        vector: Vector | None,
        limit: int,
        min_confidence: float,
    ) -> RecallResult:
        """Several sources at once (concurrently, one connection each), ranked together."""
        batches = await asyncio.gather(
            *(self._load(s, agent_id, query, vector, min_confidence) for s in sources)
        )
        return self.select([c for batch in batches for c in batch], limit=limit)
