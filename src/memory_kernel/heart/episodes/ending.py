"""Ending an episode: completion plus admission control (ADD / NOT / REPLACE / MERGE).

With the rule judge an end is one transaction of three statements (four for a
REPLACE/MERGE): ``BEGIN`` with the agent's admission lock, a lower ``ef_search`` and
generic plans (``reads.admission_opening``); the episode locked and its top-k candidates,
searched in the same statement (``reads.get_for_end``); the whole write (episode, target,
merge group, audit rows) in one. An LLM judge is asked *outside* any transaction (it may
take seconds); the decision is then re-checked and written under the admission lock: if
the candidates changed meanwhile, the rules decide on the fresh ones.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import NamedTuple

import numpy as np
from sqlalchemy.ext.asyncio import AsyncConnection

from memory_kernel.heart.episodes import admission_sql as reads
from memory_kernel.heart.episodes import repository as repo
from memory_kernel.heart.episodes.admission import (
    AdmissionPlan,
    Decision,
    JudgeAnswer,
    decide,
    plan_admission,
    prefilter,
)
from memory_kernel.heart.episodes.rows import (
    admission_details,
    admission_events,
    admission_run,
    completion_values,
    judge_name,
    ongoing,
)
from memory_kernel.heart.episodes.vectors import Vector, embed_or_none
from memory_kernel.heart.episodes.writes import Completion, complete_in
from memory_kernel.judges.base import AdmissionRequest, AdmissionRun, AdmissionVerdict, Judge
from memory_kernel.judges.rules import AdmissionRules
from memory_kernel.models.enums import AdmissionStatus, EpisodeStatus
from memory_kernel.models.episodes import AdmissionDecision, Episode, EpisodeEnd, EpisodeEndInput
from memory_kernel.runtime import Runtime

__all__ = ["ADMISSION_EF_SEARCH", "Admission"]

#: ``hnsw.ef_search`` of the admission top-k search (k <= 20). Admission only wants
#: candidates at similarity >= 0.7, which an HNSW scan meets first. Measured at 10k episodes
#: over 800 queries (400 near-duplicates of stored runs, 200 repeats, 200 new): ef_search
#: 16, 20 and 40 all found the 603 candidates an exact scan finds, 10 missed 6; 20 costs
#: 40% less than 40 (benchmarks/episodes.py prints the same check on every run). Only agents
#: promoted to an HNSW partition are affected; the shared partition is searched exactly.
ADMISSION_EF_SEARCH = 20

#: Which admission event (in ``rows.admission_events``) counts the merge-group members moved.
_ADMISSION_EVENT = 1


class _Read(NamedTuple):
    episode: Episode
    vector: Vector | None  # of the final summary
    new_vector: bool  # ``vector`` is not the one stored (the write sets it)
    candidates: list[reads.Candidate] | None  # None: not searched with ``vector``


class _Decided(NamedTuple):
    request: AdmissionRequest
    decision: Decision
    plan: AdmissionPlan
    done: Episode  # the episode as completed, before the plan's writes
    now: datetime


class Admission:
    """``EpisodeService.end``: see the module docstring."""

    def __init__(self, runtime: Runtime, judge: Judge | None) -> None:
        self._rt = runtime
        self._cfg = runtime.config.heart
        self._rules = AdmissionRules.from_config(self._cfg)
        self._judge = judge
        # Never above the configured default (a store tuned lower stays lower), never
        # below k (an HNSW scan returns at most ef_search rows).
        ef = min(runtime.config.storage.hnsw_ef_search, ADMISSION_EF_SEARCH)
        self._ef_search = max(ef, self._cfg.admission_candidates)

    async def end(self, episode_id: uuid.UUID, args: EpisodeEndInput) -> EpisodeEnd:
        agent_id, final = args.agent_id, args.summary
        if self._judge is None:
            # Rules only: one transaction, no read ahead. A new summary is embedded first,
            # outside the transaction, so no lock is held while the embedder works.
            fresh = None if final is None else await embed_or_none(self._rt, final)
            async with self._rt.db.lean_transaction(self._opening(agent_id)) as conn:
                read = await self._read(conn, episode_id, args, fresh)
                return await self._admit(conn, args, read, None)
        async with self._rt.db.connection() as conn:
            found = await repo.get(conn, agent_id=agent_id, episode_id=episode_id)
        stored, vector = ongoing(found, episode_id)
        fresh = None if final is None else await embed_or_none(self._rt, final)
        vector = await self._end_vector(stored, vector, final, fresh)
        # The judge may take seconds: it is asked outside any transaction.
        answer = None
        if vector is not None:
            run = admission_run(args, stored, self._rt.clock.now())
            answer = await self._ask_judge(self._judge, agent_id, run, vector)
        async with self._rt.db.lean_transaction(self._opening(agent_id)) as conn:
            read = await self._read(conn, episode_id, args, vector)
            return await self._admit(conn, args, read, answer)

    def _opening(self, agent_id: str) -> list[str]:
        return reads.admission_opening(agent_id, self._ef_search)

    async def _read(
        self,
        conn: AsyncConnection,
        episode_id: uuid.UUID,
        args: EpisodeEndInput,
        vector: Vector | None,
    ) -> _Read:
        """The ongoing episode, locked, the vector of its final summary and its admission
        candidates, searched in the same round trip with ``vector`` (the final summary's,
        when the caller has it) or else the stored vector."""
        found = await reads.get_for_end(
            conn,
            agent_id=args.agent_id,
            episode_id=episode_id,
            vector=vector,
            k=self._cfg.admission_candidates,
            min_similarity=self._cfg.admission_similarity,
        )
        stored, stored_vector = ongoing(
            None if found is None else (found.episode, found.vector), episode_id
        )
        assert found is not None  # ongoing() raised otherwise
        final = await self._end_vector(stored, stored_vector, args.summary, vector)
        # Searched with another vector (the summary is unchanged after all, or start could
        # not embed it): the candidates are searched again, with the final one.
        used, candidates = found.searched, None
        if final is not None and used is not None:  # the same object, mostly: no comparison
            candidates = found.candidates if final is used or np.array_equal(final, used) else None
        return _Read(stored, final, final is not stored_vector, candidates)

    async def _end_vector(
        self, stored: Episode, vector: Vector | None, final: str | None, fresh: Vector | None
    ) -> Vector | None:
        """The vector of the final summary: the stored one when the summary is unchanged,
        else the fresh one. Only when start could not embed is the embedder asked here
        (rare, and inside the transaction on the rules path)."""
        if final is None or final == stored.summary:
            return vector if vector is not None else await embed_or_none(self._rt, stored.summary)
        return fresh

    async def _admit(
        self,
        conn: AsyncConnection,
        args: EpisodeEndInput,
        read: _Read,
        answer: JudgeAnswer | None,
    ) -> EpisodeEnd:
        """Decide and write, under the agent's admission lock (taken by the opening)."""
        agent, now = args.agent_id, self._rt.clock.now()
        stored, vector = read.episode, read.vector
        run = admission_run(args, stored, now)
        request, heads = await self._request(conn, agent, run, vector, read.candidates)
        decision = decide(
            request,
            threshold=self._cfg.admission_similarity,
            rules=self._rules,
            embedded=vector is not None,
            answer=answer,
        )
        verdict = decision.verdict
        target = await self._target(conn, agent, verdict, heads)
        done = stored.model_copy(
            update={
                "status": EpisodeStatus.COMPLETED,
                "outcome": args.outcome,
                "summary": run.summary,
                "references": args.references,
                "artifacts": args.artifacts,
                "ended_at": now,
            }
        )
        plan = plan_admission(done, verdict, target, now)
        decided = _Decided(request, decision, plan, done, now)
        new = await self._write(conn, args, run, read, decided)
        return EpisodeEnd(
            episode=new,
            decision=verdict.decision,
            target_id=verdict.target_run_id,
            reason=verdict.reason,
            similarity=decision.similarity,
            decided_by=decision.decided_by,
            judge_error=decision.judge_error,
        )

    async def _write(
        self,
        conn: AsyncConnection,
        args: EpisodeEndInput,
        run: AdmissionRun,
        read: _Read,
        decided: _Decided,
    ) -> Episode:
        """The completion, the plan and their audit rows, as one statement."""
        request, decision, plan, done, now = decided
        completed = completion_values(
            args, run, read.episode, read.vector, now, new_vector=read.new_vector
        )
        values = {**completed, **plan.new_values}
        # The audit rows are built before the write: from the episode as it will be.
        group = {k: v for k, v in plan.new_values.items() if k in ("canonical", "canonical_id")}
        written = done.model_copy(update=group)
        details = admission_details(self._judge, request, decision, plan.target_id)
        write = Completion(
            values=values,
            events=admission_events(written, decision, plan, details, now),
            counted=_ADMISSION_EVENT,
            now=now,
            target_id=plan.target_id,
            target_values=plan.target_values,
            repoint=plan.repoint,
        )
        return await complete_in(conn, agent_id=args.agent_id, episode_id=run.id, write=write)

    async def _target(
        self,
        conn: AsyncConnection,
        agent: str,
        verdict: AdmissionVerdict,
        heads: Mapping[uuid.UUID, uuid.UUID | None],
    ) -> Episode | None:
        """The row a REPLACE/MERGE acts on, locked; a MERGE joins the head of the target's
        group. The head the candidate search saw is locked with the target in one go."""
        acts = verdict.decision in (AdmissionDecision.REPLACE, AdmissionDecision.MERGE)
        target_id = verdict.target_run_id
        if target_id is None or not acts:
            return None
        merge = verdict.decision is AdmissionDecision.MERGE
        head_id = heads.get(target_id) if merge else None
        ids = [target_id] if head_id is None else [target_id, head_id]
        found = await reads.lock_targets(conn, agent_id=agent, episode_ids=ids)
        target = found.get(target_id)
        if merge and target is not None and target.canonical_id is not None:
            group = target.canonical_id
            if group not in found:  # the group moved since the search read it
                found = await reads.lock_targets(conn, agent_id=agent, episode_ids=[group])
            head = found.get(group)
            if head is not None and head.admission is AdmissionStatus.ACTIVE:
                return head
        return target

    async def _request(
        self,
        conn: AsyncConnection,
        agent: str,
        run: AdmissionRun,
        vector: Vector | None,
        found: list[reads.Candidate] | None = None,
    ) -> tuple[AdmissionRequest, dict[uuid.UUID, uuid.UUID | None]]:
        """The request for ``run`` and the merge-group head of each candidate (``found``:
        the candidates, when already searched with ``vector``)."""
        if found is None and vector is not None:
            found = await reads.candidates(
                conn,
                agent_id=agent,
                vector=vector,
                exclude=run.id,
                k=self._cfg.admission_candidates,
                min_similarity=self._cfg.admission_similarity,
            )
        found = found or []
        cands = tuple(c for c, _ in found)
        request = AdmissionRequest(agent_id=agent, run=run, candidates=cands)
        return request, {c.id: head for c, head in found}

    async def _ask_judge(
        self, judge: Judge, agent: str, run: AdmissionRun, vector: Vector
    ) -> JudgeAnswer | None:
        """The judge's answer for ``run`` (outside any transaction), or ``None`` when the
        pre-filter decides anyway. Failures and timeouts become an answer with an error."""
        async with self._rt.db.connection() as conn:
            # The same ef_search as the re-check under the lock, so the same candidates.
            await reads.set_ef_search(conn, self._ef_search)
            request, _ = await self._request(conn, agent, run, vector)
        if prefilter(request, threshold=self._cfg.admission_similarity) is not None:
            return None
        name, ids = judge_name(judge), tuple(c.id for c in request.candidates)
        timeout = self._cfg.admission_judge_timeout_s
        try:
            async with asyncio.timeout(timeout):
                answers = await judge.admit([request])
        except TimeoutError:
            return JudgeAnswer(name, ids, error=f"timed out after {timeout}s")
        except Exception as exc:  # an untrusted plug-in: any failure means "use the rules"
            return JudgeAnswer(name, ids, error=f"raised {type(exc).__name__}: {exc}")
        if not isinstance(answers, Sequence) or len(answers) != 1:
            return JudgeAnswer(name, ids, error="answered a batch of the wrong size")
        return JudgeAnswer(name, ids, answer=answers[0])
