"""The two hooks an agent framework calls around each LLM turn.

``pre_turn(TurnInput) -> TurnContext`` — one unit of work for its writes, while the context
is built on other connections:

1. pick the frame (``frames.select_frame``: the host's frame, else a tiny default);
2. start or reuse the session's episode (``heart.episodes.start``, with its own dedup);
3. if the frame deliberates (``auto_deliberation_frames``, default decision/debug), start a
   deliberation described by the user's message — **layer 2** may find it a duplicate of a
   recent decision of the session, and then none is started;
4. return the turn's context (filled in by the context engine) and the ``TurnHandle``.

``post_turn(TurnHandle, TurnOutcome) -> TurnResult`` — one unit of work, all or nothing:

0. the turn is claimed (``turn_results``): a handle recorded before returns its first
   result and writes nothing (one older than ``turn_results_days`` is refused); ``remember``
   tool results are learned as facts (prepared and embedded before the unit);
1. ``record_decision`` tool results are recorded explicitly (``brain.record`` path, any
   frame, no filter); a deliberation of the same turn is abandoned, so the decision is
   not stored twice;
2. otherwise **layer 1** (``informational.classify_response``) looks at the response: if it
   is informational (status, transition, report…) the deliberation is abandoned
   (soft-deleted with ``informational: <family>``);
3. otherwise the decision is drafted from the response (``draft.draft_decision``) and
   finalized through **layer 3** (the quality gate) and layer 2 again on the final text;
   without ``TurnOutcome.decision_confidence`` it gets the confidence of the gate's quality
   score (0.6-0.8, see ``brain.gate``), so later turns recall it passively; a turn whose
   tool calls errored is not rejected for that placeholder confidence;
4. ``TurnOutcome.decision_outcomes`` are recorded (``brain.record_outcome``);
5. the exchange (the user's message and the reply, with their times) is stored as turns
   (and queued for fact extraction, when an extractor is configured), and the episode
   records the turn — also when no decision was recorded.

The brain's and the heart's operations called inside a unit join it. Locks are always taken
in the same order — the turn's decision row, the session's decision lock, then episodes —
so concurrent turns of one session cannot deadlock. Counters are updated only after
commit. Embeddings are computed before a unit opens.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from memory_kernel.brain import Brain, review
from memory_kernel.brain.policy import FinalizeResult, StartResult
from memory_kernel.brain.stats import Layer
from memory_kernel.brain.tool import RECORD_DECISION_OPTIONAL
from memory_kernel.cognitive import turn_results
from memory_kernel.cognitive.draft import draft_decision, summarise_message
from memory_kernel.cognitive.frames import deliberates, select_frame
from memory_kernel.cognitive.informational import (
    RECORD_DECISION_TOOL,
    InformationalVerdict,
    classify_response,
)
from memory_kernel.cognitive.results import turn_result
from memory_kernel.context.engine import ContextEngine, request_from_turn
from memory_kernel.errors import ValidationError
from memory_kernel.heart import Heart
from memory_kernel.heart.facts.tool import remember_inputs
from memory_kernel.models.context import AssembledContext
from memory_kernel.models.decisions import Decision, DecisionInput, GateStats
from memory_kernel.models.enums import DecidedBy, EventKind, MemoryKind, Stakes
from memory_kernel.models.episodes import EpisodeInput, EpisodeStart
from memory_kernel.models.turns import (
    TurnContext,
    TurnHandle,
    TurnInput,
    TurnOutcome,
    TurnReport,
    TurnResult,
)
from memory_kernel.runtime import Runtime, Vector, off_loop
from memory_kernel.storage.events import Event, write_events
from memory_kernel.taskgroup import task_group

__all__ = ["CognitiveLayer"]


@dataclass(frozen=True, slots=True)
class _Draft:
    description: str
    reasoning: str | None
    vector: Vector | None = None


def _stakes(signals: dict[str, object]) -> Stakes:
    value = signals.get("stakes")
    try:
        return Stakes(str(value)) if value is not None else Stakes.MEDIUM
    except ValueError:
        return Stakes.MEDIUM


def explicit_decisions(turn: TurnHandle, outcome: TurnOutcome) -> list[DecisionInput]:
    """The decisions of the turn's successful ``record_decision`` tool calls."""
    found = []
    for result in outcome.tool_results:
        if result.tool_name.casefold() != RECORD_DECISION_TOOL or result.is_error:
            continue
        args = dict(result.arguments)
        description = args.pop("description", None) or result.output
        if not isinstance(description, str) or not description.strip():
            raise ValidationError("a record_decision tool result carries no description")
        # The fields the record_decision schema offers (brain.tool): the two cannot drift.
        known = {k: args[k] for k in RECORD_DECISION_OPTIONAL if k in args}
        found.append(
            DecisionInput(
                agent_id=turn.agent_id,
                session_id=turn.session_id,
                description=description,
                frame=turn.frame,
                episode_id=turn.episode_id,
                **known,
            )
        )
    return found


class CognitiveLayer:
    """``pre_turn`` / ``post_turn`` over the Heart (episodes) and the Brain (decisions)."""

    def __init__(
        self, runtime: Runtime, heart: Heart, brain: Brain, context: ContextEngine | None = None
    ) -> None:
        self._rt = runtime
        self._heart = heart
        self._brain = brain
        self._context = context

    def stats(self) -> GateStats:
        return self._brain.counters.snapshot()

    async def pre_turn(self, turn: TurnInput) -> TurnContext:
        """Start or reuse the episode, maybe start a deliberation, return the context."""
        # The turn's time first: a clock gone bad fails here, before anything is written.
        started_at = self._rt.clock.now()
        frame = select_frame(turn)
        deliberate = deliberates(frame, self._rt.config.brain.auto_deliberation_frames)
        # The summary is at most 200 characters, well inside a decision description.
        description = summarise_message(turn.message)
        # One embedding serves the episode's start dedup and the deliberation's dedup.
        (vector,) = await self._rt.embed_or_none([description])
        # The context is read on its own connections while the turn's writes commit (the
        # unit is opened inside its task, so the context's reads do not join it); the task
        # group cancels one if the other fails, and raises one typed error, not a group.
        async with task_group() as group:
            begun = group.create_task(self._begin(turn, frame, description, vector, deliberate))
            built = group.create_task(self._build_context(turn))
        episode, started = begun.result()
        assembled = built.result()
        self._observe_start(turn, frame, started)
        handle = TurnHandle(
            agent_id=turn.agent_id,
            session_id=turn.session_id,
            episode_id=episode.episode.id,
            decision_id=None if started is None else started.decision_id,
            frame=frame,
            started_at=started_at,
            duplicate_of=None if started is None else started.dedup.duplicate_of,
            message=turn.message,
            context=None if assembled is None else assembled.report,
            turn_id=uuid.uuid4(),
        )
        report = TurnReport(
            frame=frame,
            episode_reused=episode.deduplicated,
            deliberation_started=handle.decision_id is not None,
            tokens_used=0 if assembled is None else assembled.report.tokens_used,
            context=None if assembled is None else assembled.report,
        )
        text = "" if assembled is None else assembled.text
        return TurnContext(text=text, report=report, turn=handle)

    def _report_event(self, turn: TurnHandle) -> Event | None:
        report = turn.context
        if report is None:
            return None
        return Event(
            agent_id=turn.agent_id,
            kind=MemoryKind.EPISODE,
            memory_id=turn.episode_id,
            event=EventKind.CONTEXT_ASSEMBLED,
            decided_by=DecidedBy.SYSTEM,
            at=self._rt.clock.now(),
            reason=f"mode: {report.inclusion.mode}",
            details=report.model_dump(mode="json"),
        )

    async def _build_context(self, turn: TurnInput) -> AssembledContext | None:
        if self._context is None:
            return None
        return await self._context.build(request_from_turn(turn))

    async def _begin(
        self,
        turn: TurnInput,
        frame: str,
        description: str,
        vector: Vector | None,
        deliberate: bool,
    ) -> tuple[EpisodeStart, StartResult | None]:
        """pre_turn's writes, one unit: the session lock first (see the lock order above),
        the episode, then the deliberation."""
        episode_input = EpisodeInput(
            agent_id=turn.agent_id, session_id=turn.session_id, summary=description
        )
        async with self._rt.db.transaction():
            if deliberate:
                await self._brain.lock_session(agent_id=turn.agent_id, session_id=turn.session_id)
            episode = await self._heart.episodes.start(episode_input, embedding=vector)
            if not deliberate:
                return episode, None
            started = await self._brain.deliberate(
                turn.agent_id,
                turn.session_id,
                description,
                episode_id=episode.episode.id,
                frame=frame,
                stakes=_stakes(turn.signals),
                embedding=vector,
            )
        return episode, started

    def _observe_start(self, turn: TurnInput, frame: str, started: StartResult | None) -> None:
        if started is None:
            self._brain.counters.reject(
                Layer.NOT_DELIBERATED,
                f"frame: {frame}",
                agent_id=turn.agent_id,
                session_id=turn.session_id,
            )
            return
        self._brain.counters.observe_start(
            started, agent_id=turn.agent_id, session_id=turn.session_id
        )

    async def post_turn(self, turn: TurnHandle, outcome: TurnOutcome) -> TurnResult:
        """Record what the turn decided (through the gate) and update the episode, atomically."""
        turn_results.check_age(turn, self._rt.clock.now(), self._rt.config.consolidation)
        explicit_inputs = explicit_decisions(turn, outcome)
        # remember tool calls: validated and embedded now, learned in the unit below.
        remembered = await self._heart.facts.prepare(remember_inputs(turn, outcome))
        # Layer 1 may read all of a long response: off the event loop then.
        verdict = await off_loop(
            len(outcome.response_text),
            classify_response,
            outcome.response_text,
            frame=turn.frame,
            tool_names=[t.tool_name for t in outcome.tool_results],
            deliberation_frames=self._rt.config.brain.auto_deliberation_frames,
            scorer=self._brain.classifier.scorer,
            threshold=self._brain.classifier.threshold,
        )
        finalize = (
            turn.decision_id is not None and not explicit_inputs and not verdict.informational
        )
        draft = _Draft(*draft_decision(outcome)) if finalize else None
        texts = [d.description for d in explicit_inputs] + ([draft.description] if draft else [])
        turns = self._heart.turns
        said = turns.exchange(
            turn.message,
            outcome.response_text,
            asked_at=turn.started_at,
            replied_at=self._rt.clock.now(),
        )
        # One embedder call: the decisions' texts and the exchange's turns.
        vectors = await self._rt.embed_or_none(texts + turns.embed_texts(said))
        said_vectors = vectors[len(texts) :]
        del vectors[len(texts) :]
        if draft is not None:
            draft = _Draft(draft.description, draft.reasoning, vectors.pop())
        report_event = self._report_event(turn)
        async with self._rt.db.transaction() as conn:
            # A handle is recorded once: a repeat (a retry whose first commit went through, a
            # re-run graph node) waits here for the first post and gets its result back.
            first = await turn_results.claim(
                conn, agent_id=turn.agent_id, turn_id=turn.turn_id, at=self._rt.clock.now()
            )
            if first is not None:
                return first
            # The turn's deliberation first: its row lock comes before the session lock.
            result = await self._settle(turn, outcome, verdict, draft, bool(explicit_inputs))
            explicit = [
                await self._brain.add(d, embedding=v)
                for d, v in zip(explicit_inputs, vectors, strict=True)
            ]
            for report in outcome.decision_outcomes:  # how earlier decisions turned out
                await self._brain.record_outcome(
                    report.decision_id, agent_id=turn.agent_id,
                    outcome=report.outcome, note=report.note,
                )  # fmt: skip
            learned = await self._heart.facts.learn_prepared(remembered)
            if report_event is not None:  # the context report, for `memory-kernel inspect`
                await write_events(conn, [report_event])
            await turns.record(
                said,
                said_vectors,
                agent_id=turn.agent_id,
                session_id=turn.session_id,
                episode_id=turn.episode_id,
                decision_id=turn.decision_id,
                queue_at=self._heart.extraction.queue_time(),  # None: no extractor
            )
            # Last, so a bad episode id fails the turn after every other write (all roll back).
            await self._heart.episodes.record_turn(
                agent_id=turn.agent_id, episode_id=turn.episode_id
            )
            recorded = turn_result(turn, explicit, result)
            if learned:
                recorded = recorded.model_copy(update={"remembered": learned})
            await turn_results.save(
                conn, agent_id=turn.agent_id, turn_id=turn.turn_id, result=recorded
            )
        self._observe_post(turn, explicit, result)
        if self._context is not None:
            # After commit: recall for the session's next turn in the background.
            self._context.schedule_prefetch(
                agent_id=turn.agent_id,
                session_id=turn.session_id,
                turns=[turn.message, outcome.response_text],
            )
        return recorded

    async def _settle(
        self,
        turn: TurnHandle,
        outcome: TurnOutcome,
        verdict: InformationalVerdict,
        draft: _Draft | None,
        explicit: bool,
    ) -> FinalizeResult | None:
        """Finalize or abandon the turn's deliberation; ``None`` when there was none.
        ``explicit``: the agent recorded the turn's decisions itself."""
        if turn.decision_id is None:
            return None
        # Layer 1's probability stays with the deliberation, for a judge's second reading
        # (brain.review); not when the agent recorded its decisions itself.
        gate = None if explicit else review.mark(verdict.probability, passed=draft is not None)
        if draft is None:
            layer, reason = (
                (Layer.EXPLICIT, RECORD_DECISION_TOOL)
                if explicit
                else (Layer.INFORMATIONAL, str(verdict.family))
            )
            return await self._brain.abandon(
                turn.decision_id, agent_id=turn.agent_id, layer=layer, reason=reason, gate=gate
            )
        return await self._brain.conclude(
            turn.decision_id,
            agent_id=turn.agent_id,
            description=draft.description,
            embedding=draft.vector,
            reasoning=draft.reasoning,
            confidence=outcome.decision_confidence,
            stakes=outcome.decision_stakes,
            tool_errors=any(t.is_error for t in outcome.tool_results),
            gate=gate,
        )

    def _observe_post(
        self, turn: TurnHandle, explicit: list[Decision], result: FinalizeResult | None
    ) -> None:
        counters = self._brain.counters
        counters.turns += 1
        counters.recorded_explicit += len(explicit)
        if result is not None and result.layer is not Layer.EXPLICIT:
            self._brain.counters.observe_finalize(
                result, agent_id=turn.agent_id, decision_id=turn.decision_id
            )
