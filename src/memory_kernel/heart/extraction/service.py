"""``kernel.heart.extraction``: facts extracted from the conversation, off the hot path.

``post_turn`` queues the exchange's turns in its own unit of work: the statement that
stores them queues them (:meth:`queue_time`; nothing when no extractor is configured). A
drain — the background worker, ``consolidate`` (first, so the night's passes see the facts)
or ``MemoryKernel.extract_pending`` — then, for one agent at a time:

1. claims a batch of the agent's turns, oldest first (``store.claim``: a short transaction
   that leases the rows to this drain and counts an attempt);
2. calls the extractor outside any transaction, then validates and embeds the facts
   (``FactService.prepare``), so neither a slow model nor the embedder holds a lock;
3. in one unit of work deletes the rows it still holds and learns their facts
   (``learn_prepared``: admission, dedup, supersession) with provenance to the turn and its
   episode (``policy.fact_inputs``).

A process killed anywhere leaves the rows queued (before 3 commits) or gone with their facts
learned (after): nothing is lost, nothing is learned twice. An extractor that fails
(``ExtractorError``: it raised, timed out, answered the wrong shape) or a learn that fails
leaves the rows with the error and a backoff; after ``max_attempts`` a turn is parked.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections import Counter
from collections.abc import Sequence
from datetime import datetime

from memory_kernel.errors import ExtractorError, MemoryKernelError, ValidationError
from memory_kernel.heart.extraction import policy, store
from memory_kernel.heart.facts.service import FactService
from memory_kernel.models.extraction import (
    ExtractedFact,
    ExtractionQueueState,
    ExtractionReport,
    ExtractionTurn,
)
from memory_kernel.models.facts import FactInput
from memory_kernel.protocols import FactExtractor
from memory_kernel.runtime import Runtime
from memory_kernel.validation import check_agent_id

__all__ = ["ExtractionService"]

_log = logging.getLogger(__name__)
# Agents one drain of every agent serves per listing; the rest wait for the next listing.
_AGENTS_PER_ROUND = 100


def _checked(answer: object, turns: Sequence[ExtractionTurn]) -> list[list[ExtractedFact]]:
    """The extractor's answer if it has the promised shape, else ``ExtractorError``."""
    if isinstance(answer, list) and len(answer) == len(turns):
        checked: list[list[ExtractedFact]] = []
        for found in answer:
            if not isinstance(found, list):
                break
            facts = [f for f in found if isinstance(f, ExtractedFact)]
            if len(facts) != len(found):
                break
            checked.append(facts)
        else:
            return checked
    raise ExtractorError(
        f"the extractor returned {type(answer).__name__} for {len(turns)} turn(s): "
        "expected one list of ExtractedFact per turn"
    )


class ExtractionService:
    """The extraction queue of every agent; see the module docstring."""

    def __init__(self, runtime: Runtime, facts: FactService) -> None:
        self._rt = runtime
        self._facts = facts

    @property
    def extractor(self) -> FactExtractor | None:
        return self._rt.extractor

    @property
    def active(self) -> bool:
        """Whether turns are queued: an extractor is configured and extraction enabled."""
        return self._rt.extractor is not None and self._rt.config.extraction.enabled

    def queue_time(self) -> datetime | None:
        """What ``post_turn`` passes to ``TurnService.record``: the time its turns are queued
        at (the turns' insert queues them in the same statement, in the turn's unit of work,
        so a turn that is not recorded is not queued either); ``None``: not queued."""
        return self._rt.clock.now() if self.active else None

    async def state(self, agent_id: str) -> ExtractionQueueState:
        """The agent's queue: waiting, retrying and parked turns, the newest error."""
        check_agent_id(agent_id)
        async with self._rt.db.connection() as conn:
            return await store.counts(conn, agent_id)

    async def retry_parked(self, agent_id: str) -> int:
        """Queue the agent's parked turns again (after fixing what broke the extractor): due
        now, their attempts counted afresh. Returns how many."""
        check_agent_id(agent_id)
        async with self._rt.db.transaction() as conn:
            return await store.unpark(conn, agent_id, self._rt.clock.now())

    async def drain(self, agent_id: str | None = None, *, limit: int = 1000) -> ExtractionReport:
        """Extract up to ``limit`` due turns: of ``agent_id``, or of every agent with due
        turns (longest waiting first). Without an extractor nothing happens."""
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValidationError("limit must be a positive integer")
        if agent_id is not None:
            return await self.drain_agent(check_agent_id(agent_id), limit=limit)
        report = ExtractionReport()
        if self.extractor is None:
            return report
        async with self._rt.db.connection() as conn:
            agents = await store.due_agents(conn, self._rt.clock.now(), _AGENTS_PER_ROUND)
        for agent in agents:
            left = limit - report.turns - report.failed
            if left <= 0:
                break
            report += await self.drain_agent(agent, limit=left)
        return report

    async def drain_agent(self, agent_id: str, *, limit: int) -> ExtractionReport:
        """Batch after batch of one agent's due turns, until none is due, a batch fails, or
        ``limit`` turns were tried."""
        report = ExtractionReport()
        while self.extractor is not None and report.turns + report.failed < limit:
            done = await self._batch(agent_id, limit - report.turns - report.failed)
            if done is None:
                break
            report += done
            if done.failed:  # the rest wait behind the failed turns (policy: in order)
                break
        return report

    async def _batch(self, agent_id: str, limit: int) -> ExtractionReport | None:
        extractor, cfg = self.extractor, self._rt.config.extraction
        assert extractor is not None
        token = uuid.uuid4()
        claimed = await self._claim(agent_id, token, min(limit, cfg.batch_size))
        if not claimed:
            return None
        turns = [c.queued.turn for c in claimed if c.queued.turn is not None]
        try:
            found = await self._extract(extractor, turns)
            inputs: list[FactInput] = []
            exists = {c.queued.turn_id: c.episode_exists for c in claimed}
            for turn, facts in zip(turns, found, strict=True):
                inputs += policy.fact_inputs(
                    turn, facts, extractor=extractor.name, episode_exists=exists[turn.turn_id]
                )
            prepared = await self._facts.prepare(inputs)
            async with self._rt.db.transaction() as conn:
                held = await store.settle(conn, agent_id, token)
                mine = [[p for p in chunk if _turn_of(p.input) in held] for chunk in prepared]
                outcomes = await self._facts.learn_prepared([c for c in mine if c])
        except MemoryKernelError as exc:
            return await self._failed(agent_id, token, claimed, exc)
        return ExtractionReport(
            turns=len(held), facts=dict(Counter(o.action.value for o in outcomes))
        )

    async def _claim(self, agent_id: str, token: uuid.UUID, size: int) -> list[store.Claimed]:
        async with self._rt.db.transaction() as conn:
            await store.lock_agent(conn, agent_id)
            now = self._rt.clock.now()
            rows = await store.claim(conn, agent_id, size)
            taken = policy.take([r.queued for r in rows], now=now, batch_size=size)
            if not taken:
                return []
            lease = policy.lease_until(now, self._rt.config.extraction)
            await store.mark_claimed(
                conn, agent_id, [q.turn_id for q in taken], token=token, lease_until=lease
            )
        return rows[: len(taken)]

    async def _extract(
        self, extractor: FactExtractor, turns: list[ExtractionTurn]
    ) -> list[list[ExtractedFact]]:
        """The extractor's answer, checked; any failure is an ``ExtractorError``. Bounded by
        the lease: past it another drain may claim the same turns."""
        if not turns:
            return []
        try:
            async with asyncio.timeout(self._rt.config.extraction.lease_s):
                answer = await extractor.extract(turns)
        except ExtractorError:
            raise
        except TimeoutError as exc:
            raise ExtractorError(f"extractor {extractor.name!r} timed out") from exc
        except Exception as exc:  # an extractor may raise anything: its failure, typed
            raise ExtractorError(f"extractor {extractor.name!r} failed: {exc!r}") from exc
        return _checked(answer, turns)

    async def _failed(
        self,
        agent_id: str,
        token: uuid.UUID,
        claimed: list[store.Claimed],
        exc: MemoryKernelError,
    ) -> ExtractionReport:
        cfg, now = self._rt.config.extraction, self._rt.clock.now()
        _log.warning(
            "fact extraction failed for %d turn(s); kept for a retry: %s",
            len(claimed), exc, extra={"agent_id": agent_id},
        )  # fmt: skip
        failures = []
        for c in claimed:
            attempts = c.queued.attempts + 1  # the claim counted this one
            parked = now if policy.parks(attempts, cfg) else None
            due = policy.retry_at(now, attempts, cfg)
            failures.append(store.Failure(c.queued.turn_id, due, parked))
        async with self._rt.db.transaction() as conn:
            await store.fail(conn, agent_id, token, failures, policy.error_text(exc))
        return ExtractionReport(
            failed=len(failures),
            parked=sum(f.parked_at is not None for f in failures),
            errors=(policy.error_text(exc),),
        )


def _turn_of(fact: FactInput) -> uuid.UUID:
    return uuid.UUID(str(fact.metadata["turn_id"]))
