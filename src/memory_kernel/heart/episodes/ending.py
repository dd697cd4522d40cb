"""Ending an episode: completion plus admission control (ADD / NOT / REPLACE / MERGE).

An end is one transaction: the agent's admission lock (and the search's ``ef_search``),
the episode locked with its top-k candidates in one statement, the REPLACE/MERGE target
locked if the decision has one, and the whole write (episode, target, merge group, audit
rows) in one statement. The rules decide (``policy``); ``admission_store`` holds the SQL.

Nothing is embedded while the transaction is open: a new summary is embedded before it.
Only when start could not embed the summary (an embedder outage) and the end keeps it is
the vector missing: the transaction then ends without writing, the summary is embedded,
and the end runs again.

An LLM judge is asked *outside* any transaction (it may take seconds); the decision is
then re-checked and written under the admission lock: if the candidates changed
meanwhile, the rules decide on the fresh ones.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, NamedTuple

import numpy as np
from sqlalchemy.ext.asyncio import AsyncConnection

from memory_kernel.heart.episodes import admission_store as sql
from memory_kernel.heart.episodes import store
from memory_kernel.heart.episodes.policy import (
    EVENT_OF,
    AdmissionPlan,
    Decision,
    JudgeAnswer,
    admission_run,
    check_ongoing,
    completed,
    completion_values,
    decide,
    plan_admission,
    prefilter,
)
from memory_kernel.judges.base import AdmissionRequest, AdmissionRun, AdmissionVerdict, Judge
from memory_kernel.judges.rules import AdmissionRules
from memory_kernel.models.enums import (
    AdmissionStatus,
    DecidedBy,
    EpisodeStatus,
    EventKind,
    MemoryKind,
)
from memory_kernel.models.episodes import AdmissionDecision, Episode, EpisodeEnd, EpisodeEndInput
from memory_kernel.runtime import MISSING, Missing, Runtime, Vector
from memory_kernel.storage.events import Event

__all__ = ["ADMISSION_EF_SEARCH", "Admission"]

#: ``hnsw.ef_search`` of the admission top-k search (k <= 20). Admission only wants
#: candidates at similarity >= 0.7, which an HNSW scan meets first: 16, 20 and 40 all find
#: the candidates an exact scan finds at 10k episodes, 10 misses some (benchmarks/episodes.py
#: prints the same check on every run). Only agents promoted to an HNSW partition are
#: affected; the shared partition is searched exactly.
ADMISSION_EF_SEARCH = 20

#: Which audit row (``_events``) counts the merge-group members moved.
_ADMISSION_EVENT = 1

#: A summary and its vector (``None``: it has none), embedded before the transaction.
_Given = tuple[str, Vector | None]


class _Read(NamedTuple):
    episode: Episode
    vector: Vector | None  # of the final summary
    new_vector: bool  # ``vector`` is not the one stored (the write sets it)
    candidates: list[sql.Candidate] | None  # None: not searched with ``vector``


class _Unembedded(NamedTuple):
    """The end stopped before writing: the kept ``summary`` has no vector yet."""

    summary: str


def _final_vector(
    final: str, stored: Episode, stored_vector: Vector | None, given: _Given | None
) -> Vector | Missing | None:
    """The vector of the ``final`` summary: the stored one when the summary is unchanged,
    else the one embedded before the transaction; ``MISSING`` when neither has it."""
    if final == stored.summary and stored_vector is not None:
        return stored_vector
    if given is not None and given[0] == final:
        return given[1]
    return MISSING


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
        given = None
        if args.summary is not None:
            given = (args.summary, (await self._rt.embed_or_none([args.summary]))[0])
        answer = None
        if self._judge is not None:  # (it saw the episode ongoing, or raised)
            given, answer = await self._consult(self._judge, episode_id, args, given)
        seen = self._judge is not None
        ended = await self._admit(episode_id, args, given, answer, seen_ongoing=seen)
        if isinstance(ended, _Unembedded):
            given = (ended.summary, (await self._rt.embed_or_none([ended.summary]))[0])
            ended = await self._admit(episode_id, args, given, answer, seen_ongoing=True)
        if isinstance(ended, _Unembedded):
            raise AssertionError("unreachable: the kept summary was embedded")
        return ended

    async def _consult(
        self, judge: Judge, episode_id: uuid.UUID, args: EpisodeEndInput, given: _Given | None
    ) -> tuple[_Given, JudgeAnswer | None]:
        """The final summary's vector and the judge's answer, both before the transaction."""
        async with self._rt.db.connection() as conn:
            found = await store.get(conn, agent_id=args.agent_id, episode_id=episode_id)
        stored = check_ongoing(None if found is None else found[0], episode_id)
        stored_vector = None if found is None else found[1]
        final = stored.summary if args.summary is None else args.summary
        vector = _final_vector(final, stored, stored_vector, given)
        if isinstance(vector, Missing):
            vector = (await self._rt.embed_or_none([final]))[0]
        answer = None
        if vector is not None:
            run = admission_run(args, stored, self._rt.clock.now())
            answer = await self._ask_judge(judge, args.agent_id, run, vector)
        return (final, vector), answer

    async def _admit(
        self,
        episode_id: uuid.UUID,
        args: EpisodeEndInput,
        given: _Given | None,
        answer: JudgeAnswer | None,
        *,
        seen_ongoing: bool,
    ) -> EpisodeEnd | _Unembedded:
        """The end's transaction: lock, read, decide, write. ``seen_ongoing``: an earlier
        step of this call saw the episode ongoing."""
        async with self._rt.db.transaction() as conn:
            before = await sql.lock_admission(conn, args.agent_id, self._ef_search, episode_id)
            raced = seen_ongoing or before == EpisodeStatus.ONGOING.value
            read = await self._read(conn, episode_id, args, given, ongoing_before=raced)
            if isinstance(read, _Unembedded):
                return read
            return await self._decide_and_write(conn, args, read, answer)

    async def _read(
        self,
        conn: AsyncConnection,
        episode_id: uuid.UUID,
        args: EpisodeEndInput,
        given: _Given | None,
        *,
        ongoing_before: bool,
    ) -> _Read | _Unembedded:
        """The ongoing episode, locked, the vector of its final summary and its admission
        candidates, searched in the same round trip with the given vector or else the
        stored one."""
        found = await sql.get_for_end(
            conn,
            agent_id=args.agent_id,
            episode_id=episode_id,
            vector=None if given is None else given[1],
            k=self._cfg.admission_candidates,
            min_similarity=self._cfg.admission_similarity,
        )
        episode = None if found is None else found.episode
        stored = check_ongoing(episode, episode_id, ongoing_before=ongoing_before)
        assert found is not None  # check_ongoing raised otherwise
        final = stored.summary if args.summary is None else args.summary
        vector = _final_vector(final, stored, found.vector, given)
        if isinstance(vector, Missing):
            return _Unembedded(final)
        # Searched with another vector (the summary is unchanged after all, or start could
        # not embed it): the candidates are searched again, with the final one.
        used, candidates = found.searched, None
        if vector is not None and used is not None:  # the same object, mostly: no comparison
            candidates = (
                found.candidates if vector is used or np.array_equal(vector, used) else None
            )
        return _Read(stored, vector, vector is not found.vector, candidates)

    async def _decide_and_write(
        self,
        conn: AsyncConnection,
        args: EpisodeEndInput,
        read: _Read,
        answer: JudgeAnswer | None,
    ) -> EpisodeEnd:
        """Decide and write, under the agent's admission lock."""
        agent, now = args.agent_id, self._rt.clock.now()
        run = admission_run(args, read.episode, now)
        request, heads = await self._request(conn, agent, run, read.vector, read.candidates)
        decision = decide(
            request,
            threshold=self._cfg.admission_similarity,
            rules=self._rules,
            embedded=read.vector is not None,
            answer=answer,
        )
        verdict = decision.verdict
        target = await self._target(conn, agent, verdict, heads)
        done = completed(read.episode, run)
        plan = plan_admission(done, verdict, target, now)
        values = completion_values(run, read.episode, read.vector, new_vector=read.new_vector)
        # The audit rows are built before the write: from the episode as it will be.
        group = {k: v for k, v in plan.new_values.items() if k in ("canonical", "canonical_id")}
        details = admission_details(self._judge, request, decision, plan.target_id)
        write = sql.Completion(
            values={**values, **plan.new_values},
            events=_events(done.model_copy(update=group), decision, plan, details, now),
            counted=_ADMISSION_EVENT,
            now=now,
            target_id=plan.target_id,
            target_values=plan.target_values,
            repoint=plan.repoint,
        )
        new = await sql.complete(conn, agent_id=agent, episode_id=run.id, write=write)
        return EpisodeEnd(
            episode=new,
            decision=verdict.decision,
            target_id=verdict.target_run_id,
            reason=verdict.reason,
            similarity=decision.similarity,
            decided_by=decision.decided_by,
            judge_error=decision.judge_error,
        )

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
        found = await sql.lock_targets(conn, agent_id=agent, episode_ids=ids)
        target = found.get(target_id)
        if merge and target is not None and target.canonical_id is not None:
            group = target.canonical_id
            if group not in found:  # the group moved since the search read it
                found = await sql.lock_targets(conn, agent_id=agent, episode_ids=[group])
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
        found: list[sql.Candidate] | None = None,
    ) -> tuple[AdmissionRequest, dict[uuid.UUID, uuid.UUID | None]]:
        """The request for ``run`` and the merge-group head of each candidate (``found``:
        the candidates, when already searched with ``vector``)."""
        if found is None and vector is not None:
            found = await sql.candidates(
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
            await sql.set_ef_search(conn, self._ef_search)
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


# -- audit rows --------------------------------------------------------------------------------


def _events(
    new: Episode, decision: Decision, plan: AdmissionPlan, details: dict[str, Any], now: datetime
) -> list[Event]:
    """The audit rows of an end: ended (by the caller), the admission decision (by rule or
    judge), and the change of the target a REPLACE superseded or a MERGE joined, if any."""
    verdict, by = decision.verdict, decision.decided_by

    def event(memory_id: uuid.UUID, kind: EventKind, decided_by: DecidedBy, **kw: Any) -> Event:
        return Event(new.agent_id, MemoryKind.EPISODE, memory_id, kind, decided_by, now, **kw)

    events = [
        event(new.id, EventKind.EPISODE_ENDED, DecidedBy.CALLER, reason=new.outcome),
        event(
            new.id,
            EVENT_OF[verdict.decision],
            by,
            reason=verdict.reason,
            score=decision.similarity,
            related_id=verdict.target_run_id,
            details=details,
        ),
    ]
    if plan.target_id is not None and plan.target_event is not None:
        canonical = new.id if new.canonical else new.canonical_id
        events.append(
            event(
                plan.target_id,
                plan.target_event,
                by,
                reason=verdict.reason,
                score=decision.similarity,
                related_id=new.id,
                details={"decision": verdict.decision.value, "canonical_id": str(canonical)},
            )
        )
    return events


def judge_name(judge: Judge) -> str:
    try:  # only for the audit trail: a broken property must not break admission
        return str(judge.name)
    except Exception:
        return type(judge).__name__


def admission_details(
    judge: Judge | None,
    request: AdmissionRequest,
    decision: Decision,
    acted_on: uuid.UUID | None,
) -> dict[str, Any]:
    """What the audit row keeps beyond decision/reason/score/decided_by: the stage that
    decided, the judge and why its answer was not used, the candidates it saw. The write
    adds ``repointed``: how many members of a merge group moved to a new canonical."""
    return {
        "stage": decision.stage,
        "judge": None if judge is None or decision.stage == "prefilter" else judge_name(judge),
        "judge_error": decision.judge_error,
        "candidates": [
            {"id": str(c.id), "similarity": round(c.similarity, 4)} for c in request.candidates
        ],
        "acted_on": None if acted_on is None else str(acted_on),
    }
