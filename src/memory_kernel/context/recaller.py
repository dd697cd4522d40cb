"""Recall: load hybrid candidates (``retrieval``), then rank, dedup and diversify them with
the pure policy (``recall``). Shared by the passive nodes, the prefetch and the active tool.

Each call opens its own connection, so the engine can run several recalls concurrently.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from sqlalchemy.ext.asyncio import AsyncConnection

from memory_kernel import similarity
from memory_kernel.context import retrieval
from memory_kernel.context.current import resolve_current
from memory_kernel.context.recall import (
    Candidate,
    dedup_decisions,
    diversity_sample,
    rank_candidates,
    relevant_fill,
    with_similarity,
)
from memory_kernel.context.replaced import replaced_texts
from memory_kernel.context.stale import demote_replaced
from memory_kernel.errors import EmbedderError, InvalidVectorError
from memory_kernel.heart.turns.store import StoredTurn, next_turns
from memory_kernel.models.context import MemoryHit, MemorySource
from memory_kernel.models.facts import PREFERENCE
from memory_kernel.runtime import OFF_LOOP_CHARS, Runtime, off_loop
from memory_kernel.similarity import has_words
from memory_kernel.vectors import Vector

__all__ = ["RecallResult", "Recaller"]

_log = logging.getLogger(__name__)
_Key = tuple[str, MemorySource, float, str | None]
# Term statistics (row counts, document frequencies) of an agent with at least this many rows
# of a table are reused this long; a smaller agent's are counted on every recall.
_CACHE_MIN_ROWS = 1000
_STATS_TTL_S = 30.0
_STATS_MAX = 8192
#: ``judges(query, cosines)`` → ``judge(old_text, new_text, cosine)``: whether a newer fact
#: recalled for ``query`` gives an older one's slot a new value (``FactService.slot_judge``;
#: ``cosines``: each fact text's cosine to the query), for ``context.current``.
SlotJudges = Callable[[str, Mapping[str, float]], Callable[[str, str, float], bool]]


def _outcome_group(hit: MemoryHit) -> str | None:
    """Diversity clusters decisions of one outcome only; other memories as before."""
    return hit.outcome if hit.source is MemorySource.DECISION else None


@dataclass(frozen=True, slots=True)
class RecallResult:
    hits: list[MemoryHit]
    deduplicated: int = 0  # decisions removed as near-duplicates of a more recent one


class Recaller:
    """Hybrid recall over one agent's facts, episodes, decisions or turns."""

    def __init__(self, runtime: Runtime, *, judges: SlotJudges | None = None) -> None:
        self._rt = runtime
        self._judges = judges
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
        keep: int | None = None,
        exclude_session: str | None = None,
    ) -> RecallResult:
        """Up to ``limit`` memories; beyond the first ``keep`` (default: all) only those
        about the query (``recall.relevant_fill``). ``exclude_session``: leave out the
        turns of that session."""
        found = await self._load(
            source, agent_id, query, vector, min_confidence, limit, exclude_session
        )
        return self.select(found, limit=limit, keep=keep, query=(query, vector))

    async def _load(
        self,
        source: MemorySource,
        agent_id: str,
        query: str,
        vector: Vector | None,
        min_confidence: float,
        limit: int,
        exclude_session: str | None = None,
    ) -> list[Candidate]:
        cfg = self._rt.config.context
        words = await self._query_words(query)
        default_confidence = (
            cfg.turn_confidence if source is MemorySource.TURN else cfg.episode_confidence
        )
        async with self._rt.db.connection() as conn:
            terms = retrieval.weigh(
                await self._stats(conn, source, agent_id, words, min_confidence), words
            )
            found = await retrieval.candidates(
                conn,
                source,
                agent_id=agent_id,
                query=query,
                vector=vector,
                k=max(cfg.candidate_pool, limit),
                min_confidence=min_confidence,
                terms=terms,
                default_confidence=default_confidence,
                exclude_session=exclude_session,
            )
            if source is MemorySource.FACT and found:
                older = await replaced_texts(
                    conn, agent_id=agent_id, fact_ids=[c.id for c in found]
                )
                found = [replace(c, supersedes=tuple(older.get(c.id, ()))) for c in found]
        # The share of the query's keyword weight a memory holds: comparable across nodes
        # (each table has its own frequencies), where "of the best candidate" made every
        # node's best look like a full match.
        total = sum(t.weight for t in terms)
        return [replace(c, lexical=c.lexical / total) for c in found] if total > 0 else found

    async def replies(
        self, *, agent_id: str, turn_ids: Sequence[Any], count: int
    ) -> dict[Any, list[StoredTurn]]:
        """The ``count`` turns that followed each of ``turn_ids`` (``context.replies``)."""
        if not turn_ids:
            return {}
        async with self._rt.db.connection() as conn:
            return await next_turns(conn, agent_id=agent_id, turn_ids=turn_ids, count=count)

    async def term_weights(
        self, source: MemorySource, *, agent_id: str, query: str, min_confidence: float
    ) -> list[retrieval.WeightedTerm]:
        """The weight each of ``query``'s words gets in recall's full-text score now (what a
        recall would use; for inspection and tests)."""
        words = retrieval.query_words(query)
        async with self._rt.db.connection() as conn:
            return retrieval.weigh(
                await self._stats(conn, source, agent_id, words, min_confidence), words
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
        """The agent's row count N and each word's document frequency.

        They follow the data: an agent with fewer than ``_CACHE_MIN_ROWS`` rows is counted
        afresh on every call (N and every word in one statement, one snapshot, so no word
        is ever in more rows than N), which costs little at that size. Only a larger
        agent's N and non-zero frequencies are reused for ``_STATS_TTL_S`` — counting N
        there scans all its rows, and a burst of writes moves a large N by a small share.
        A word found in no row is never cached (a row may say it any moment), and N is
        counted again with every word when its entry expires."""
        if not words:
            return retrieval.TermStats(rows=0, terms={})
        scope = (agent_id, source, min_confidence)
        now = time.monotonic()
        rows = self._cache_get((*scope, None), now)
        if rows is None:
            fresh = await retrieval.term_stats(
                conn, source, agent_id=agent_id, words=words, min_confidence=min_confidence
            )
            if fresh.rows >= _CACHE_MIN_ROWS:
                self._cache_put((*scope, None), fresh.rows, now)
                self._cache_terms(scope, fresh.terms, now)
            return fresh
        known = {w: v for w in words if (v := self._cache_get((*scope, w), now)) is not None}
        missing = [w for w in words if w not in known]
        if missing:
            fresh = await retrieval.term_stats(
                conn, source, agent_id=agent_id, words=missing, min_confidence=min_confidence,
                count_rows=False,
            )  # fmt: skip
            self._cache_terms(scope, fresh.terms, now)
            known.update(fresh.terms)
        return retrieval.TermStats(rows=int(rows), terms=known)

    def _cache_terms(
        self, scope: tuple[str, MemorySource, float], terms: dict[str, tuple[str, int]], now: float
    ) -> None:
        for word, value in terms.items():
            if value[1] > 0:
                self._cache_put((*scope, word), value, now)

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

    def select(
        self,
        found: Sequence[Candidate],
        *,
        limit: int,
        query: tuple[str, Vector | None],
        keep: int | None = None,
    ) -> RecallResult:
        """Rank, dedup decisions (newest of each near-duplicate group), diversify, cut."""
        cfg = self._rt.config.context
        hits = rank_candidates(
            found,
            now=self._rt.clock.now(),
            half_life_days=cfg.recency_half_life_days,
            lexical_weight=cfg.lexical_weight,
            pool=max(cfg.candidate_pool, limit),
            lexical_scale=1.0,
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
        if self._judges is not None:
            # Before diversity: of two look-alike values of one slot, the newer one stays.
            hits = self._resolve(hits, vectors, self._judges, query)
        hits = diversity_sample(
            hits,
            [vectors.get(h.id) for h in hits],
            threshold=cfg.diversity_similarity,
            limit=limit,
            group=_outcome_group,
        )
        if keep is not None:
            hits = relevant_fill(hits, keep=keep, ratio=cfg.fill_similarity_ratio)
        return RecallResult(hits=hits, deduplicated=deduplicated)

    @staticmethod
    def _resolve(
        hits: list[MemoryHit],
        vectors: dict[Any, Vector | None],
        judges: SlotJudges,
        query: tuple[str, Vector | None],
    ) -> list[MemoryHit]:
        """Two current values of one slot: the newer fact wins (``context.current``)."""

        def cosine(va: Vector | None, vb: Vector | None) -> float:
            return 0.0 if va is None or vb is None else similarity.cosine(va, vb)

        facts = [h for h in hits if h.source is MemorySource.FACT]
        if len(facts) < 2:  # no slot can have two values: no judge to build (hot path)
            return hits
        text, query_vector = query
        judge = judges(text, {h.text: cosine(vectors.get(h.id), query_vector) for h in facts})

        def closeness(old: MemoryHit, new: MemoryHit) -> float:
            return cosine(vectors.get(old.id), vectors.get(new.id))

        return resolve_current(
            hits,
            updates=lambda o, n: judge(o.text, n.text, closeness(o, n)),
            closeness=closeness,
        )

    async def preferences(
        self, *, agent_id: str, query: str, vector: Vector | None, limit: int
    ) -> list[MemoryHit]:
        """The agent's current preferences (facts of category ``PREFERENCE``), the ``limit``
        best for the query: found by kind, ranked by the relevance score (``context.traits``);
        two of one slot read newest first, as in any recall."""
        cfg = self._rt.config.context
        async with self._rt.db.connection() as conn:
            found = await retrieval.preferences(
                conn,
                agent_id=agent_id,
                category=PREFERENCE,
                min_confidence=cfg.passive_min_confidence,
                pool=max(cfg.candidate_pool, limit),
            )
        found = [with_similarity(c, vector) for c in found]
        return self.select(found, limit=limit, query=(query, vector)).hits

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
            *(self._load(s, agent_id, query, vector, min_confidence, limit) for s in sources)
        )
        result = self.select(
            [c for batch in batches for c in batch], limit=limit, query=(query, vector)
        )
        # A current fact ranks above the older turns and episodes that state a value it
        # replaced (context.stale).
        return RecallResult(demote_replaced(result.hits), result.deduplicated)
