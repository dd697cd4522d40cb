"""``kernel.heart.facts``: learn (admission, dedup, supersession, contradictions), search,
history, as-of views, and the embedding of facts that were stored without a vector.

A learn is a batch of one, so single and batch learns share every rule (``policy``). The
flow: validate, embed (outside the transaction: a slow embedder holds no lock), then one
unit of work — a caller's, if one is open — that takes the agents' lock, reads the
candidates a stretch of the batch at a time (bounded memory), decides each fact in input
order and writes each agent's part in one statement (``store_write``).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import TypeVar

import numpy as np
from sqlalchemy.ext.asyncio import AsyncConnection

from memory_kernel.errors import NotFoundError, ValidationError
from memory_kernel.heart.facts import store, store_write
from memory_kernel.heart.facts.admission import admit_fact
from memory_kernel.heart.facts.candidates import AgentState, Item, Prepared, Waiting
from memory_kernel.heart.facts.normalise import features
from memory_kernel.heart.facts.policy import (
    Decided,
    PendingReport,
    Writes,
    decide_new,
    decide_pending,
    outcome,
)
from memory_kernel.heart.facts.read_resolution import (
    SEARCH_POOL,
    SUCCESSOR_SOURCES,
    SUCCESSORS_EACH,
    SlotJudge,
    newest_hits,
    read_judge,
    successor_hits,
)
from memory_kernel.heart.facts.relation import RelationThresholds
from memory_kernel.heart.facts.scorers import Scorers, load_scorers
from memory_kernel.models.enums import FactStatus
from memory_kernel.models.facts import Fact, FactInput, FactMatch, FactSearchHit, LearnOutcome
from memory_kernel.runtime import Runtime
from memory_kernel.similarity import normalise_subject, text_overlap
from memory_kernel.storage.search import nearest
from memory_kernel.storage.tables import facts
from memory_kernel.validation import check_agent_id, check_text, check_unit_interval
from memory_kernel.vectors import Vector

__all__ = ["MAX_PENDING", "READ_CHUNK", "FactService"]

T = TypeVar("T")

#: Facts decided per chunk of ``learn_many``: bounds the in-memory similarity matrix.
DECIDE_CHUNK = 1000
#: Items per candidate read: bounds what one read returns.
READ_CHUNK = 64
_MAX_QUERY_BYTES = 16 * 1024
_MAX_CHAIN_HOPS = 10_000
#: Most facts one ``embed_pending`` call takes per agent (``ConsolidationConfig.pending_batch``
#: is at most as large).
MAX_PENDING = 10_000


def _as_batch(batch: Iterable[FactInput]) -> list[FactInput]:
    """``learn_many``'s batch as a list; ``ValidationError`` for anything not an iterable of
    facts (``None``, a number, a single fact or a string, which iterate into other things)."""
    if isinstance(batch, FactInput | str | bytes | Mapping) or not isinstance(batch, Iterable):
        raise ValidationError(
            f"learn_many takes an iterable of FactInput, got {type(batch).__name__}"
        )
    return list(batch)


async def _check_derived(conn: AsyncConnection, batch: Sequence[FactInput]) -> None:
    """``NotFoundError`` unless every ``derived_from`` id is an episode of the fact's agent
    (in the learn's unit: nothing is written otherwise)."""
    derived: dict[str, set[uuid.UUID]] = {}
    for fact in batch:
        if fact.derived_from:
            derived.setdefault(fact.agent_id, set()).update(fact.derived_from)
    for agent, ids in sorted(derived.items()):
        missing = await store.missing_episodes(conn, agent, ids)
        if missing:
            raise NotFoundError(
                f"derived_from names {len(missing)} id(s) that are no episode of agent "
                f"{agent!r}, e.g. {missing[0]}"
            )


def _check_id(fact_id: object) -> None:
    if not isinstance(fact_id, uuid.UUID):
        raise ValidationError(f"fact_id must be a UUID, got {type(fact_id).__name__}")


class FactService:
    """Facts of every agent. Every method takes the agent id; nothing crosses agents."""

    def __init__(self, runtime: Runtime) -> None:
        self._rt = runtime
        self._scorers: Scorers | None = None

    @property
    def scorers(self) -> Scorers:
        """The learned scorers of the configuration (read once)."""
        if self._scorers is None:
            directory = self._rt.config.heart.fact_scorer_dir
            self._scorers = load_scorers(directory, self._rt.embedder.name)
        return self._scorers

    # -- learning -----------------------------------------------------------------------

    async def learn(self, fact: FactInput) -> LearnOutcome:
        """Store ``fact`` unless it duplicates a current one; retire what it replaces."""
        return (await self.learn_many([fact]))[0]

    async def learn_many(self, batch: Iterable[FactInput]) -> list[LearnOutcome]:
        """The same as calling :meth:`learn` for each fact in order, in far fewer round trips.
        ``batch``: any iterable of ``FactInput`` (a list, a generator…), read once.
        All or nothing: one unit of work (the caller's, when one is open), decided in chunks
        of 1000 facts; embedding happens before it opens."""
        return await self.learn_prepared(await self.prepare(batch))

    async def prepare(self, batch: Iterable[FactInput]) -> list[list[Prepared]]:
        """Validate and embed ``batch`` (in chunks), for :meth:`learn_prepared`: a caller
        that will learn inside its own unit of work prepares before opening it, so no
        embedder call happens while the unit is open."""
        batch = _as_batch(batch)
        return [
            await self._prepare(batch[i : i + DECIDE_CHUNK])
            for i in range(0, len(batch), DECIDE_CHUNK)
        ]

    async def learn_prepared(self, chunks: Sequence[Sequence[Prepared]]) -> list[LearnOutcome]:
        """Learn what :meth:`prepare` made ready; joins a caller's open unit of work."""
        if not chunks:
            return []
        agents = {p.input.agent_id for chunk in chunks for p in chunk}
        outcomes: list[LearnOutcome] = []
        async with self._rt.db.transaction() as conn:
            await store.lock_agents(conn, agents)
            await _check_derived(conn, [p.input for chunk in chunks for p in chunk])
            for prepared in chunks:
                outcomes += await self._learn_chunk(conn, list(prepared))
        # New facts wait, staged, for the index worker. (In a caller's unit this is noted
        # before it commits: a worker round that finds nothing yet leaves them to its next.)
        self._rt.db.staged.note("facts", agents)
        return outcomes

    async def _learn_chunk(
        self, conn: AsyncConnection, items: list[Prepared]
    ) -> list[LearnOutcome]:
        now, t = self._rt.clock.now(), self.thresholds()
        admitted: dict[str, list[tuple[int, Item]]] = {}
        for i, p in enumerate(items):
            admitted.setdefault(p.input.agent_id, [])
            if p.admission.admitted:
                admitted[p.input.agent_id].append((i, p))
        states = {a: AgentState(self._k, capacity=len(m)) for a, m in admitted.items()}
        writes = {a: Writes() for a in admitted}

        def decide(i: int) -> Decided:
            agent = items[i].input.agent_id
            return decide_new(i, items[i], now, states[agent], writes[agent], t)

        decided = await self._decide(conn, admitted, states, len(items), decide)
        refreshed: dict[uuid.UUID, Fact] = {}
        for agent in sorted(writes):
            refreshed |= await store_write.write(conn, agent, writes[agent], now)
        return [
            outcome(p, d, states[p.input.agent_id], refreshed)
            for p, d in zip(items, decided, strict=True)
        ]

    async def _decide(
        self,
        conn: AsyncConnection,
        members: Mapping[str, Sequence[tuple[int, Item]]],
        states: Mapping[str, AgentState],
        total: int,
        decide: Callable[[int], T],
    ) -> list[T]:
        """``decide`` the ``total`` items of a batch in input order, reading their candidates
        a stretch of ``READ_CHUNK`` items at a time (``members``: the items to read for, by
        agent, with their batch index)."""
        # Spare neighbours only when earlier items of the batch may retire some of them.
        fetch = self._k if total == 1 else self._k * 2
        decided: list[T] = []
        for start in range(0, total, READ_CHUNK):
            end = min(start + READ_CHUNK, total)
            for agent, items in members.items():
                stretch = [(i, p) for i, p in items if start <= i < end]
                if stretch:
                    states[agent].absorb(await store.read_candidates(conn, agent, stretch, fetch))
            decided += [decide(i) for i in range(start, end)]
        return decided

    @property
    def _k(self) -> int:
        return self._rt.config.heart.fact_neighbours

    def thresholds(self) -> RelationThresholds:
        return RelationThresholds.from_config(
            self._rt.config.heart,
            update_scorer=self.scorers.update,
            duplicate_scorer=self.scorers.duplicate,
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
                    admission=admit_fact(
                        fact.content, explicit=fact.explicit, scorer=self.scorers.admission
                    ),
                    confidence=(
                        cfg.default_confidence if fact.confidence is None else fact.confidence
                    ),
                )
            )
        wanted = [p for p in prepared if p.admission.admitted and not p.input.defer_embedding]
        if wanted:
            vectors = await self._rt.embed_or_none([p.input.content for p in wanted])
            for p, vector in zip(wanted, vectors, strict=True):
                p.vector = vector
        return prepared

    # -- the embedding queue -------------------------------------------------------------

    async def embed_pending(
        self, agent_id: str | None = None, *, limit: int = 500
    ) -> PendingReport:
        """Embed facts stored without a vector and run the dedup / value-change /
        contradiction checks for them, against the facts that were current when they
        arrived and after (consolidation calls this)."""
        if agent_id is not None:
            check_agent_id(agent_id)
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PENDING:
            raise ValidationError(f"limit must be an integer between 1 and {MAX_PENDING}")
        if agent_id is None:
            async with self._rt.db.connection() as conn:
                agents = await store.agents_with_pending(conn, limit)
        else:
            agents = [agent_id]
        report = PendingReport()
        for agent in agents:
            report += await self._settle(agent, limit)
        return report

    async def _settle(self, agent_id: str, limit: int) -> PendingReport:
        """One pass over an agent's waiting facts: a batch decided in the order they were
        learned, against the stored facts and the ones this pass already settled."""
        async with self._rt.db.connection() as conn:
            waiting = await store.pending(conn, agent_id, limit)
        if not waiting:
            return PendingReport()
        # Outside the transaction: a slow embedder must not hold the agent's lock.
        vectors = await self._rt.embed([f.content for f in waiting])
        async with self._rt.db.transaction() as conn:
            await store.lock_agents(conn, [agent_id])
            now, t = self._rt.clock.now(), self.thresholds()
            # Another pass, or a learn that superseded one by its subject, may have settled
            # some of them since they were read.
            still = await store.still_pending(conn, agent_id, [f.id for f in waiting])
            items = [Waiting(f, v) for f, v in zip(waiting, vectors, strict=True) if f.id in still]
            state, writes = AgentState(self._k, capacity=len(items)), Writes()
            decided = await self._decide(
                conn,
                {agent_id: list(enumerate(items))},
                {agent_id: state},
                len(items),
                lambda i: decide_pending(i, items[i], state, writes, now, t),
            )
            await store_write.write(conn, agent_id, writes, now)
        # The embedded facts are staged: the index worker moves them into the HNSW index.
        self._rt.db.staged.note("facts", [agent_id])
        return sum(decided, PendingReport())

    # -- reading ------------------------------------------------------------------------

    async def get(self, fact_id: uuid.UUID, *, agent_id: str) -> Fact:
        check_agent_id(agent_id)
        _check_id(fact_id)
        async with self._rt.db.connection() as conn:
            found = await store.by_ids(conn, agent_id, [fact_id])
        if not found:
            raise NotFoundError(f"no fact {fact_id} for this agent")
        return found[0]

    async def search(
        self, agent_id: str, query: str, *, k: int = 10, min_confidence: float = 0.0
    ) -> list[FactSearchHit]:
        """Current facts most similar to ``query``: vector hits (cosine), plus facts still
        waiting for a vector found by full text (scored by word overlap). Superseded, merged,
        deprecated and rejected facts are never returned. Two current values of one slot
        among the first ``SEARCH_POOL`` recalled: the newer one first, the older one marked
        with it (``read_resolution.newest_hits``)."""
        check_agent_id(agent_id)
        check_text(query, field="query", max_bytes=_MAX_QUERY_BYTES)
        check_unit_interval(min_confidence, field="min_confidence")
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 1000:
            raise ValidationError("k must be an integer between 1 and 1000")
        (vector,) = await self._rt.embed_or_none([query])  # none: the text index still answers
        pool = max(k, SEARCH_POOL)
        hits: list[FactSearchHit] = []
        vectors: dict[uuid.UUID, Vector] = {}
        async with self._rt.db.connection() as conn:
            statuses: tuple[str, ...] = store.CURRENT
            if vector is not None:
                rows = await nearest(
                    conn, facts, agent_id=agent_id, vector=vector, k=pool, where=store.CONFIDENT,
                    columns=store.SEARCH_COLUMNS, params={"min_confidence": min_confidence},
                )  # fmt: skip
                for r in rows:
                    hit = FactSearchHit(fact=store.to_fact(r), similarity=1.0 - float(r.distance),
                                        matched_by=FactMatch.VECTOR)  # fmt: skip
                    hits.append(hit)
                    found_vector = store.vector_of(r)
                    if found_vector is not None:
                        vectors[hit.fact.id] = found_vector
                statuses = (FactStatus.PENDING_EMBED.value,)
            found = await store.text_search(
                conn, agent_id, query, statuses=statuses, k=pool, min_confidence=min_confidence
            )
            seen = {h.fact.id for h in hits}
            hits += [
                FactSearchHit(fact=f, similarity=text_overlap(query, f.content),
                              matched_by=FactMatch.TEXT)
                for f in found if f.id not in seen
            ]  # fmt: skip
            hits.sort(key=lambda h: -h.similarity)
            hits = hits[:pool]
            first = [h for h in hits[: min(k, SUCCESSOR_SOURCES)] if h.fact.id in vectors]
            near = await store.successors(  # read_resolution: newer values beside the first
                conn,
                agent_id,
                [(h.fact.id, h.fact.created_at, vectors[h.fact.id]) for h in first],
                recalled={h.fact.id for h in hits},
                k=SUCCESSORS_EACH,
                min_confidence=min_confidence,
            )
        successors = successor_hits(near, vector)
        vectors.update((f.id, v) for beside in near.values() for f, v in beside)
        cosines = {  # every recalled fact: 0 where a vector is missing
            h.fact.content: 0.0 if vector is None or h.fact.id not in vectors
            else float(np.dot(vectors[h.fact.id], vector))
            for h in hits
        }  # fmt: skip
        # A successor's similarity is already its cosine to the query (``successor_hits``).
        cosines |= {s.fact.content: s.similarity for found in successors.values() for s in found}
        judge = self.slot_judge(query, cosines)
        return newest_hits(hits, k=k, judge=judge, vectors=vectors, successors=successors)

    def slot_judge(self, query: str, cosines: Mapping[str, float]) -> SlotJudge:
        """Whether a newer recalled fact gives an older one's slot a new value, for the facts
        recalled for ``query`` (``cosines``: each fact text's cosine to it): the read scorer
        (``read_resolution``). Pure: no I/O."""
        return read_judge(query, cosines, self.thresholds(), self.scorers.read)

    async def history(self, fact_id: uuid.UUID, *, agent_id: str) -> list[Fact]:
        """The supersession chain ``fact_id`` belongs to (both directions), oldest first."""
        check_agent_id(agent_id)
        _check_id(fact_id)
        async with self._rt.db.connection() as conn:
            chain = {f.id: f for f in await store.by_ids(conn, agent_id, [fact_id])}
            if not chain:
                raise NotFoundError(f"no fact {fact_id} for this agent")
            frontier = list(chain)
            for _ in range(_MAX_CHAIN_HOPS):
                if not frontier:
                    break
                step = await store.chain_step(conn, agent_id, frontier)
                frontier = [f.id for f in step if f.id not in chain]
                chain.update({f.id: f for f in step})
        return sorted(chain.values(), key=lambda f: (f.valid_from, f.created_at, str(f.id)))

    async def as_of(self, agent_id: str, when: datetime) -> list[Fact]:
        """The facts that were valid at ``when`` (timezone-aware), oldest first."""
        check_agent_id(agent_id)
        if not isinstance(when, datetime) or when.tzinfo is None:
            raise ValidationError("when must be a timezone-aware datetime")
        async with self._rt.db.connection() as conn:
            return await store.as_of(conn, agent_id, when)
