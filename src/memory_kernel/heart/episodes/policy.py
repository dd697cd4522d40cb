"""The rules of episodes, pure: start dedup, admission (pre-filter, the judge's answer, the
ADD / NOT / REPLACE / MERGE plan) and the values a start or an end writes.

The service loads rows and calls these; nothing here touches the database or the embedder,
so every branch is tested without one. Vectors pass through as opaque values.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pydantic

from memory_kernel.errors import ConflictError, NotFoundError, ValidationError
from memory_kernel.judges.base import AdmissionRequest, AdmissionRun, AdmissionVerdict
from memory_kernel.judges.rules import AdmissionRules, OutcomeClass, classify_outcome
from memory_kernel.judges.rules import decide_admission as rule_verdict
from memory_kernel.models.enums import AdmissionStatus, DecidedBy, EpisodeStatus, EventKind
from memory_kernel.models.episodes import AdmissionDecision, Episode, EpisodeEndInput, EpisodeInput
from memory_kernel.similarity import other_numbers, word_overlap, words

__all__ = [
    "AUTOMATIC_OUTCOMES",
    "EVENT_OF",
    "IDLE",
    "NO_EMBEDDING",
    "SESSION_ENDED",
    "AdmissionPlan",
    "Decision",
    "DuplicateMatch",
    "JudgeAnswer",
    "OngoingEpisode",
    "admission_run",
    "check_answer",
    "check_id",
    "check_input",
    "check_ongoing",
    "completed",
    "completion_values",
    "decide",
    "find_duplicate",
    "new_row",
    "plan_admission",
    "prefilter",
]

#: The outcome of an episode ended by ``end_session``, and of one ended for being idle: they
#: say how it ended, not what came of it, so recall does not show them.
SESSION_ENDED = "session ended"
IDLE = "idle"
AUTOMATIC_OUTCOMES = frozenset({SESSION_ENDED, IDLE})

NO_EMBEDDING = "no embedding: the summary is empty or the embedder failed, so it cannot be compared"

EVENT_OF: dict[AdmissionDecision, EventKind] = {
    AdmissionDecision.ADD: EventKind.ADMISSION_ADD,
    AdmissionDecision.NOT: EventKind.ADMISSION_NOT,
    AdmissionDecision.REPLACE: EventKind.ADMISSION_REPLACE,
    AdmissionDecision.MERGE: EventKind.ADMISSION_MERGE,
}


# -- checks ------------------------------------------------------------------------------------


def check_input(episode: object) -> None:
    if not isinstance(episode, EpisodeInput):
        raise ValidationError(f"expected an EpisodeInput, got {type(episode).__name__}")


def check_id(episode_id: object) -> None:
    if not isinstance(episode_id, uuid.UUID):
        raise ValidationError(f"episode_id must be a UUID, got {type(episode_id).__name__}")


def check_ongoing(
    episode: Episode | None, episode_id: uuid.UUID, *, ongoing_before: bool = False
) -> Episode:
    """The loaded episode if it exists and is still ongoing (only those can end).
    ``ongoing_before``: this call saw it ongoing earlier, so if it has ended now a concurrent
    end won the race (``ConflictError``), not a caller ending it twice (``ValidationError``)."""
    if episode is None:
        raise NotFoundError(f"episode {episode_id} does not exist for this agent")
    if episode.status is not EpisodeStatus.ONGOING:
        if ongoing_before:
            raise ConflictError(
                f"episode {episode_id} was ended by a concurrent call ({episode.status})"
            )
        raise ValidationError(f"episode {episode_id} has already ended ({episode.status})")
    return episode


# -- start dedup -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OngoingEpisode:
    """A recent ongoing episode of the agent; ``similarity`` is ``None`` without vectors."""

    id: uuid.UUID
    summary: str
    similarity: float | None


@dataclass(frozen=True, slots=True)
class DuplicateMatch:
    id: uuid.UUID
    overlap: float
    similarity: float | None

    @property
    def reason(self) -> str:
        sim = "n/a" if self.similarity is None else f"{self.similarity:.2f}"
        return f"ongoing episode with word overlap {self.overlap:.2f}, similarity {sim}"


def find_duplicate(
    summary: str,
    recent: Sequence[OngoingEpisode],
    *,
    overlap_threshold: float,
    similarity_threshold: float,
) -> DuplicateMatch | None:
    """The best ongoing episode ``summary`` duplicates, or ``None``.

    A duplicate has word overlap above ``overlap_threshold`` (the seed's 70%) or embedding
    similarity above ``similarity_threshold``, and names no other number
    (``similarity.other_numbers``: "migrate shard 12" is not "migrate shard 13"). Empty
    summaries never match: "no words" says nothing about being the same episode. Among
    matches the highest score wins; ties go to the earliest in ``recent`` (callers pass the
    newest first).
    """
    if not summary.strip():
        return None
    best: DuplicateMatch | None = None
    best_score = -1.0
    mine = words(summary)
    for episode in recent:
        if not episode.summary.strip() or other_numbers(summary, episode.summary):
            continue
        overlap = word_overlap(mine, words(episode.summary))
        sim = episode.similarity
        if overlap > overlap_threshold or (sim is not None and sim > similarity_threshold):
            score = max(overlap, sim or 0.0)
            if score > best_score:
                best, best_score = DuplicateMatch(episode.id, overlap, sim), score
    return best


def new_row(episode: EpisodeInput, embedding: object, now: datetime) -> dict[str, Any]:
    """The row of a new episode (``embedding``: its summary's vector, or ``None``)."""
    return {
        "agent_id": episode.agent_id,
        "id": uuid.uuid4(),
        "session_id": episode.session_id,
        "summary": episode.summary,
        "status": EpisodeStatus.ONGOING.value,
        "admission": AdmissionStatus.PENDING.value,
        "canonical": True,
        "embedding": embedding,
        "started_at": now,
        "metadata": dict(episode.metadata),
        "created_at": now,
        "updated_at": now,
    }


# -- admission: pre-filter, judge answer, decision ---------------------------------------------


@dataclass(frozen=True, slots=True)
class JudgeAnswer:
    """What the judge said for one request (an answer, or why there is none)."""

    judge: str
    candidate_ids: tuple[uuid.UUID, ...]
    answer: object = None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Decision:
    verdict: AdmissionVerdict
    decided_by: DecidedBy
    stage: str  # "prefilter", "judge" or "rules"
    similarity: float | None
    judge_error: str | None = None


def prefilter(request: AdmissionRequest, *, threshold: float) -> AdmissionVerdict | None:
    """The cheap deterministic stage: ADD when nothing similar enough exists, else ``None``
    (the judge decides)."""
    if not request.candidates:
        return AdmissionVerdict(decision=AdmissionDecision.ADD, reason="no similar admitted run")
    best = max(c.similarity for c in request.candidates)
    if best < threshold:
        return AdmissionVerdict(
            decision=AdmissionDecision.ADD,
            reason=f"best similarity {best:.2f} is below the threshold {threshold:.2f}",
        )
    return None


def check_answer(answer: object, request: AdmissionRequest) -> AdmissionVerdict:
    """The judge's answer as a verdict, or ``ValueError`` saying why it cannot be used."""
    if isinstance(answer, BaseException):
        raise ValueError(f"the judge failed: {answer}")
    try:
        verdict = AdmissionVerdict.model_validate(answer)
    except pydantic.ValidationError as exc:
        raise ValueError(
            f"invalid answer: {exc.error_count()} error(s), first: {exc.errors()[0]['msg']}"
        ) from exc
    known = {c.id for c in request.candidates}
    if verdict.target_run_id is not None and verdict.target_run_id not in known:
        raise ValueError(f"target {verdict.target_run_id} is not one of the candidates")
    return verdict


def decide(
    request: AdmissionRequest,
    *,
    threshold: float,
    rules: AdmissionRules,
    embedded: bool,
    answer: JudgeAnswer | None,
) -> Decision:
    """Pre-filter, then the judge's answer when it is usable, else the rules."""
    if not embedded:
        verdict = AdmissionVerdict(decision=AdmissionDecision.ADD, reason=NO_EMBEDDING)
        return Decision(verdict, DecidedBy.RULE, "prefilter", None)
    early = prefilter(request, threshold=threshold)
    if early is not None:
        return Decision(early, DecidedBy.RULE, "prefilter", _similarity(request, None))
    error = None
    if answer is not None:
        error = answer.error
        if error is None and answer.candidate_ids != tuple(c.id for c in request.candidates):
            error = "the candidates changed while the judge was deciding"
        if error is None:
            try:
                verdict = check_answer(answer.answer, request)
            except ValueError as exc:
                error = str(exc)
            else:
                sim = _similarity(request, verdict.target_run_id)
                return Decision(verdict, DecidedBy.JUDGE, "judge", sim)
        error = f"judge {answer.judge!r}: {error}; the rules decided"
    verdict = rule_verdict(request, rules)
    return Decision(
        verdict, DecidedBy.RULE, "rules", _similarity(request, verdict.target_run_id), error
    )


def _similarity(request: AdmissionRequest, target: uuid.UUID | None) -> float | None:
    for cand in request.candidates:
        if target is None or cand.id == target:
            return cand.similarity  # candidates are most-similar first
    return None


# -- admission: the plan -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AdmissionPlan:
    """The writes a decision needs. ``repoint`` moves a merge group to a new canonical."""

    new_values: Mapping[str, Any]
    target_id: uuid.UUID | None = None
    target_values: Mapping[str, Any] = field(default_factory=dict)
    target_event: EventKind | None = None
    repoint: tuple[uuid.UUID, uuid.UUID] | None = None  # (old canonical, new canonical)


_OUTCOME_RANK = {
    OutcomeClass.SUCCESS: 2,
    OutcomeClass.PARTIAL: 1,
    OutcomeClass.UNKNOWN: 1,
    OutcomeClass.FAILURE: 0,
}


def _rank(episode: Episode) -> tuple[int, datetime]:
    # Success beats failure; among equals the newer run wins (the seed's canonical rule).
    when = episode.ended_at or episode.started_at
    return _OUTCOME_RANK[classify_outcome(episode.outcome)], when


def _union(first: tuple[str, ...], second: tuple[str, ...]) -> list[str]:
    return list(dict.fromkeys(first + second))


def plan_admission(
    new: Episode, verdict: AdmissionVerdict, target: Episode | None, now: datetime
) -> AdmissionPlan:
    """What to write for ``verdict``. For MERGE, ``target`` is the head of its merge group."""
    decision = verdict.decision
    if decision is AdmissionDecision.NOT:
        return AdmissionPlan({"admission": AdmissionStatus.NOT_ADMITTED.value})
    if decision is AdmissionDecision.ADD or target is None:
        # A REPLACE/MERGE whose target vanished cannot act on it; the run is still new.
        return AdmissionPlan({"admission": AdmissionStatus.ACTIVE.value})
    if decision is AdmissionDecision.REPLACE:
        return AdmissionPlan(
            {"admission": AdmissionStatus.ACTIVE.value},
            target_id=target.id,
            target_values={
                "admission": AdmissionStatus.SUPERSEDED.value,
                "superseded_by": new.id,
                "updated_at": now,
            },
            target_event=EventKind.SUPERSEDED,
            repoint=(target.id, new.id) if target.canonical else None,
        )
    return _plan_merge(new, target, now)


def _plan_merge(new: Episode, head: Episode, now: datetime) -> AdmissionPlan:
    new_is_winner = _rank(new) >= _rank(head)
    winner = new if new_is_winner else head
    aggregate = {
        "canonical": True,
        "canonical_id": None,
        # The head's counter already holds its group's total, so the sum does not double.
        "usage_count": new.usage_count + head.usage_count,
        "references": _union(head.references, new.references),
        "artifacts": _union(head.artifacts, new.artifacts),
    }
    demoted = {"canonical": False, "canonical_id": winner.id}
    return AdmissionPlan(
        {"admission": AdmissionStatus.ACTIVE.value, **(aggregate if new_is_winner else demoted)},
        target_id=head.id,
        target_values={**(demoted if new_is_winner else aggregate), "updated_at": now},
        target_event=EventKind.MERGED,
        repoint=(head.id, new.id) if new_is_winner else None,
    )


# -- what an end writes ------------------------------------------------------------------------


def admission_run(args: EpisodeEndInput, stored: Episode, now: datetime) -> AdmissionRun:
    """The finished run as the judge sees it."""
    return AdmissionRun(
        id=stored.id,
        summary=stored.summary if args.summary is None else args.summary,
        outcome=args.outcome,
        references=args.references,
        artifacts=args.artifacts,
        ended_at=now,
    )


def completed(stored: Episode, run: AdmissionRun) -> Episode:
    """The episode as the end completes it, before the admission plan's changes."""
    return stored.model_copy(
        update={
            "status": EpisodeStatus.COMPLETED,
            "outcome": run.outcome,
            "summary": run.summary,
            "references": run.references,
            "artifacts": run.artifacts,
            "ended_at": run.ended_at,
        }
    )


def completion_values(
    run: AdmissionRun, stored: Episode, embedding: object, *, new_vector: bool
) -> dict[str, Any]:
    """The completed episode's new column values. An unchanged summary and vector are left
    out: the row keeps them, the vector does not cross the wire again, and Postgres does not
    recompute the summary's full-text column."""
    values: dict[str, Any] = {
        "status": EpisodeStatus.COMPLETED.value,
        "outcome": run.outcome,
        "references": list(run.references),
        "artifacts": list(run.artifacts),
        "ended_at": run.ended_at,
        "updated_at": run.ended_at,
    }
    if run.summary != stored.summary:
        values["summary"] = run.summary
    if new_vector:
        values["embedding"] = embedding
    return values
