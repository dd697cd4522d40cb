"""``kernel.heart.episodes``: start with dedup, end with admission control, search.

Start: starts of one agent are serialised (advisory lock) and an ongoing episode of the
agent started within the window that says the same thing is returned instead of a new one.

End: the episode is completed and admission control decides whether it enters long-term
memory (ADD / NOT / REPLACE / MERGE). The pure stages live in ``admission.py``; an LLM
judge, when configured, is asked *outside* any transaction (it may take seconds), and the
decision is then re-checked and written under the agent's admission lock: if the
candidates changed meanwhile, the rules decide on the fresh ones.

The embedder failing never loses an episode: it is stored without a vector, start dedup
falls back to word overlap, and admission ADDs it ("no embedding").
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta
from types import EllipsisType

import numpy as np
from sqlalchemy.ext.asyncio import AsyncConnection

from memory_kernel.errors import (
    EmbedderError,
    InvalidVectorError,
    NotFoundError,
    ValidationError,
)
from memory_kernel.heart.episodes import repository as repo
from memory_kernel.heart.episodes.admission import (
    AdmissionPlan,
    JudgeAnswer,
    decide,
    plan_admission,
    prefilter,
)
from memory_kernel.heart.episodes.dedup import find_duplicate
from memory_kernel.heart.episodes.rows import (
    admission_details,
    admission_events,
    admission_run,
    as_candidate,
    check_id,
    check_input,
    completion_values,
    episode_event,
    judge_name,
    new_row,
    ongoing,
    reuse_event,
)
from memory_kernel.judges.base import (
    AdmissionRequest,
    AdmissionRun,
    AdmissionVerdict,
    Judge,
)
from memory_kernel.judges.rules import AdmissionRules, RuleJudge
from memory_kernel.models.enums import AdmissionStatus, DecidedBy, EpisodeStatus, EventKind
from memory_kernel.models.episodes import (
    AdmissionDecision,
    Episode,
    EpisodeEnd,
    EpisodeEndInput,
    EpisodeHit,
    EpisodeInput,
    EpisodeStart,
)
from memory_kernel.runtime import Runtime
from memory_kernel.similarity import text_overlap, words
from memory_kernel.storage.events import write_events
from memory_kernel.validation import check_agent_id, check_text

__all__ = ["EpisodeService"]

_log = logging.getLogger(__name__)
_MAX_K = 1000


class EpisodeService:
    """Episodes of every agent; see the module docstring."""

    def __init__(self, runtime: Runtime) -> None:
        self._rt = runtime
        self._cfg = runtime.config.heart
        self._rules = AdmissionRules.from_config(self._cfg)
        # A RuleJudge passed as "the judge" is the default behaviour, not an LLM verdict.
        judge = runtime.judge
        self._judge: Judge | None = None if isinstance(judge, RuleJudge) else judge

    # -- start ---------------------------------------------------------------------------

    async def start(self, episode: EpisodeInput) -> EpisodeStart:
        """Start an episode, or return the agent's recent ongoing one that is the same."""
        check_input(episode)
        vector = await self._embed_or_none(episode.summary)
        async with self._rt.db.transaction() as conn:
            return await self._start(conn, episode, vector)

    async def start_in(
        self,
        conn: AsyncConnection,
        episode: EpisodeInput,
        *,
        embedding: repo.Vector | EllipsisType | None = ...,
    ) -> EpisodeStart:
        """``start`` inside the caller's transaction. A caller that already embedded the
        summary passes ``embedding`` (``None`` = unavailable), so the embedder is not asked
        again while the caller's transaction holds its locks."""
        check_input(episode)
        if isinstance(embedding, EllipsisType):
            embedding = await self._embed_or_none(episode.summary)
        return await self._start(conn, episode, embedding)

    async def _start(
        self, conn: AsyncConnection, episode: EpisodeInput, vector: repo.Vector | None
    ) -> EpisodeStart:
        now = self._rt.clock.now()
        agent = episode.agent_id
        # Serialised per agent so concurrent identical starts see each other.
        await repo.lock(conn, "start", agent)
        recent = await repo.recent_ongoing(
            conn,
            agent_id=agent,
            since=now - timedelta(seconds=self._cfg.episode_dedup_window_s),
            vector=vector,
            limit=self._cfg.episode_dedup_scan,
        )
        match = find_duplicate(
            episode.summary,
            recent,
            overlap_threshold=self._cfg.episode_dedup_overlap,
            similarity_threshold=self._cfg.episode_dedup_similarity,
        )
        if match is not None:
            found = await repo.update(
                conn, agent_id=agent, episode_id=match.id, values={"updated_at": now}
            )
            await write_events(conn, [reuse_event(found, match, episode.session_id, now)])
            return EpisodeStart(episode=found, deduplicated=True, reason=match.reason)
        created = await repo.insert(conn, new_row(episode, vector, now))
        await write_events(
            conn, [episode_event(created, EventKind.EPISODE_STARTED, DecidedBy.CALLER, now)]
        )
        return EpisodeStart(episode=created, deduplicated=False)

    # -- turns and use -------------------------------------------------------------------

    async def record_turn_in(
        self, conn: AsyncConnection, *, agent_id: str, episode_id: uuid.UUID
    ) -> None:
        """Count a turn of the episode (``metadata["turns"]``) inside the caller's transaction."""
        check_agent_id(agent_id)
        check_id(episode_id)
        now = self._rt.clock.now()
        if not await repo.increment_turns(conn, agent_id=agent_id, episode_id=episode_id, now=now):
            raise NotFoundError(f"episode {episode_id} does not exist for agent {agent_id!r}")

    async def record_turn(self, *, agent_id: str, episode_id: uuid.UUID) -> None:
        async with self._rt.db.transaction() as conn:
            await self.record_turn_in(conn, agent_id=agent_id, episode_id=episode_id)

    async def record_use(self, *, agent_id: str, episode_ids: Sequence[uuid.UUID]) -> int:
        """Count one use (e.g. the episode was put in a prompt) of each episode; returns how
        many exist. MERGE sums these counters into the canonical episode."""
        check_agent_id(agent_id)
        for episode_id in episode_ids:
            check_id(episode_id)
        if not episode_ids:
            return 0
        async with self._rt.db.transaction() as conn:
            return await repo.add_usage(
                conn, agent_id=agent_id, episode_ids=episode_ids, now=self._rt.clock.now()
            )

    async def get(self, episode_id: uuid.UUID, *, agent_id: str) -> Episode:
        check_agent_id(agent_id)
        check_id(episode_id)
        async with self._rt.db.connection() as conn:
            found = await repo.get(conn, agent_id=agent_id, episode_id=episode_id)
        if found is None:
            raise NotFoundError(f"episode {episode_id} does not exist for agent {agent_id!r}")
        return found[0]

    # -- end + admission -----------------------------------------------------------------

    async def end(
        self,
        episode_id: uuid.UUID,
        *,
        agent_id: str,
        outcome: str,
        summary: str | None = None,
        references: Sequence[str] = (),
        artifacts: Sequence[str] = (),
    ) -> EpisodeEnd:
        """Complete an ongoing episode and decide whether it enters long-term memory."""
        check_id(episode_id)
        args = EpisodeEndInput(
            agent_id=agent_id,
            outcome=outcome,
            summary=summary,
            references=references,
            artifacts=artifacts,
        )
        final = args.summary
        if self._judge is None:
            # Rules only: one transaction, no read ahead. A new summary is embedded first,
            # outside the transaction, so no lock is held while the embedder works.
            fresh = None if final is None else await self._embed_or_none(final)
            async with self._rt.db.transaction() as conn:
                stored, vector = await self._lock_ongoing(conn, agent_id, episode_id)
                vector = await self._end_vector(stored, vector, final, fresh)
                return await self._admit(conn, args, stored, vector, None)
        async with self._rt.db.connection() as conn:
            found = await repo.get(conn, agent_id=agent_id, episode_id=episode_id)
        stored, vector = ongoing(found, episode_id)
        fresh = None if final is None else await self._embed_or_none(final)
        vector = await self._end_vector(stored, vector, final, fresh)
        # The judge may take seconds: it is asked outside any transaction.
        answer = None
        if vector is not None:
            run = admission_run(args, stored, self._rt.clock.now())
            answer = await self._ask_judge(self._judge, agent_id, run, vector)
        async with self._rt.db.transaction() as conn:
            stored, _ = await self._lock_ongoing(conn, agent_id, episode_id)
            return await self._admit(conn, args, stored, vector, answer)

    async def _lock_ongoing(
        self, conn: AsyncConnection, agent: str, episode_id: uuid.UUID
    ) -> tuple[Episode, repo.Vector | None]:
        found = await repo.get(
            conn, agent_id=agent, episode_id=episode_id, for_update=True, lock="admit"
        )
        return ongoing(found, episode_id)

    async def _end_vector(
        self,
        stored: Episode,
        vector: repo.Vector | None,
        final: str | None,
        fresh: repo.Vector | None,
    ) -> repo.Vector | None:
        """The vector of the final summary: the stored one when the summary is unchanged,
        else the fresh one. Only when start could not embed is the embedder asked here
        (rare, and inside the transaction on the rules path)."""
        if final is None or final == stored.summary:
            return vector if vector is not None else await self._embed_or_none(stored.summary)
        return fresh

    async def _admit(
        self,
        conn: AsyncConnection,
        args: EpisodeEndInput,
        stored: Episode,
        vector: repo.Vector | None,
        answer: JudgeAnswer | None,
    ) -> EpisodeEnd:
        """Decide and write, under the agent's admission lock (taken by ``_lock_ongoing``)."""
        agent, now = args.agent_id, self._rt.clock.now()
        run = admission_run(args, stored, now)
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
        request = await self._request(conn, agent, run, vector)
        decision = decide(
            request,
            threshold=self._cfg.admission_similarity,
            rules=self._rules,
            embedded=vector is not None,
            answer=answer,
        )
        verdict = decision.verdict
        target = await self._target(conn, agent, verdict)
        plan = plan_admission(done, verdict, target, now)
        new = await repo.update(
            conn,
            agent_id=agent,
            episode_id=run.id,
            values={**completion_values(args, run, vector, now), **plan.new_values},
        )
        moved = await self._write_target(conn, agent, plan, now)
        details = admission_details(self._judge, request, decision, plan.target_id, moved)
        await write_events(conn, admission_events(new, decision, plan, details, now))
        return EpisodeEnd(
            episode=new,
            decision=verdict.decision,
            target_id=verdict.target_run_id,
            reason=verdict.reason,
            similarity=decision.similarity,
            decided_by=decision.decided_by,
            judge_error=decision.judge_error,
        )

    async def _write_target(
        self, conn: AsyncConnection, agent: str, plan: AdmissionPlan, now: datetime
    ) -> int:
        """Apply the plan to the target and its merge group; returns how many were moved."""
        if plan.target_id is not None:
            await repo.update(
                conn, agent_id=agent, episode_id=plan.target_id, values=plan.target_values
            )
        if plan.repoint is None:
            return 0
        old, head = plan.repoint
        return await repo.repoint(conn, agent_id=agent, old=old, new=head, now=now)

    async def _target(
        self, conn: AsyncConnection, agent: str, verdict: AdmissionVerdict
    ) -> Episode | None:
        """The row a REPLACE/MERGE acts on; a MERGE joins the head of the target's group."""
        acts = verdict.decision in (AdmissionDecision.REPLACE, AdmissionDecision.MERGE)
        if verdict.target_run_id is None or not acts:
            return None
        found = await repo.get(
            conn, agent_id=agent, episode_id=verdict.target_run_id, for_update=True
        )
        target = None if found is None else found[0]
        merge = verdict.decision is AdmissionDecision.MERGE
        if merge and target is not None and target.canonical_id is not None:
            head = await repo.get(
                conn, agent_id=agent, episode_id=target.canonical_id, for_update=True
            )
            if head is not None and head[0].admission is AdmissionStatus.ACTIVE:
                return head[0]
        return target

    async def _request(
        self, conn: AsyncConnection, agent: str, run: AdmissionRun, vector: repo.Vector | None
    ) -> AdmissionRequest:
        found: list[tuple[Episode, float]] = []
        if vector is not None:
            found = await repo.candidates(
                conn,
                agent_id=agent,
                vector=vector,
                exclude=run.id,
                k=self._cfg.admission_candidates,
                min_similarity=self._cfg.admission_similarity,
            )
        cands = tuple(as_candidate(ep, sim) for ep, sim in found)
        return AdmissionRequest(agent_id=agent, run=run, candidates=cands)

    async def _ask_judge(
        self, judge: Judge, agent: str, run: AdmissionRun, vector: repo.Vector
    ) -> JudgeAnswer | None:
        """The judge's answer for ``run`` (outside any transaction), or ``None`` when the
        pre-filter decides anyway. Failures and timeouts become an answer with an error."""
        async with self._rt.db.connection() as conn:
            request = await self._request(conn, agent, run, vector)
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

    # -- search --------------------------------------------------------------------------

    async def search(self, agent_id: str, query: str, *, k: int = 5) -> list[EpisodeHit]:
        """The admitted episodes most similar to ``query`` (never NOT, superseded or ongoing).

        Falls back to full-text search when the embedder fails; the similarity of those
        hits is the word overlap with the query.
        """
        check_agent_id(agent_id)
        check_text(query, field="query", max_bytes=self._cfg.max_content_bytes)
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= _MAX_K:
            raise ValidationError(f"k must be an integer between 1 and {_MAX_K}")
        vector = await self._embed_or_none(query)
        async with self._rt.db.connection() as conn:
            if vector is None:
                found = await repo.search_text(conn, agent_id=agent_id, query=query, k=k)
                return [
                    EpisodeHit(episode=e, similarity=text_overlap(query, e.summary)) for e in found
                ]
            near = await repo.search_vector(conn, agent_id=agent_id, vector=vector, k=k)
        return [EpisodeHit(episode=e, similarity=sim) for e, sim in near]

    async def _embed_or_none(self, text: str) -> repo.Vector | None:
        """The text's vector, or ``None`` when it has no words or the embedder failed."""
        if not words(text):
            return None
        try:
            vector = (await self._rt.embed([text]))[0]
        # A broken embedder's NaN / wrong-dimension answer (InvalidVectorError, a
        # ValidationError, not an EmbedderError) is an outage too, not the caller's fault.
        except (EmbedderError, InvalidVectorError) as exc:
            _log.warning("episode stored without a vector: %s", exc)
            return None
        # A zero vector has no direction: cosine against it is undefined.
        return vector if float(np.linalg.norm(vector)) > 0.0 else None
