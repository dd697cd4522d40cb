"""Small helpers of the episodes service: input checks, row values and audit events."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from memory_kernel.errors import NotFoundError, ValidationError
from memory_kernel.heart.episodes.admission import EVENT_OF, AdmissionPlan, Decision
from memory_kernel.heart.episodes.dedup import DuplicateMatch
from memory_kernel.heart.episodes.vectors import Vector
from memory_kernel.judges.base import AdmissionRequest, AdmissionRun, Judge
from memory_kernel.models.enums import (
    AdmissionStatus,
    DecidedBy,
    EpisodeStatus,
    EventKind,
    MemoryKind,
)
from memory_kernel.models.episodes import Episode, EpisodeEndInput, EpisodeInput
from memory_kernel.storage.events import Event

__all__ = [
    "admission_details",
    "admission_events",
    "admission_run",
    "check_id",
    "check_input",
    "completion_values",
    "episode_event",
    "judge_name",
    "new_row",
    "ongoing",
    "reuse_event",
    "started_event",
]


def check_input(episode: object) -> None:
    if not isinstance(episode, EpisodeInput):
        raise ValidationError(f"expected an EpisodeInput, got {type(episode).__name__}")


def check_id(episode_id: object) -> None:
    if not isinstance(episode_id, uuid.UUID):
        raise ValidationError(f"episode_id must be a UUID, got {type(episode_id).__name__}")


def ongoing(
    found: tuple[Episode, Vector | None] | None, episode_id: uuid.UUID
) -> tuple[Episode, Vector | None]:
    """The loaded episode if it exists and is still ongoing."""
    if found is None:
        raise NotFoundError(f"episode {episode_id} does not exist for this agent")
    if found[0].status is not EpisodeStatus.ONGOING:
        raise ValidationError(f"episode {episode_id} has already ended ({found[0].status})")
    return found


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


def new_row(episode: EpisodeInput, vector: Vector | None, now: datetime) -> dict[str, Any]:
    return {
        "agent_id": episode.agent_id,
        "id": uuid.uuid4(),
        "session_id": episode.session_id,
        "summary": episode.summary,
        "status": EpisodeStatus.ONGOING.value,
        "admission": AdmissionStatus.PENDING.value,
        "canonical": True,
        "embedding": vector,
        "started_at": now,
        "metadata": dict(episode.metadata),
        "created_at": now,
        "updated_at": now,
    }


def completion_values(
    args: EpisodeEndInput,
    run: AdmissionRun,
    stored: Episode,
    vector: Vector | None,
    now: datetime,
    *,
    new_vector: bool,
) -> dict[str, Any]:
    """The completed episode's new column values. An unchanged summary and vector are left
    out: the row keeps them, the vector does not cross the wire again, and Postgres does not
    recompute the summary's full-text column."""
    values = {
        "status": EpisodeStatus.COMPLETED.value,
        "outcome": args.outcome,
        "references": list(args.references),
        "artifacts": list(args.artifacts),
        "ended_at": now,
        "updated_at": now,
    }
    if run.summary != stored.summary:
        values["summary"] = run.summary
    if new_vector:
        values["embedding"] = vector
    return values


def episode_event(
    episode: Episode,
    event: EventKind,
    decided_by: DecidedBy,
    now: datetime,
    *,
    reason: str | None = None,
    score: float | None = None,
    related_id: uuid.UUID | None = None,
    details: dict[str, Any] | None = None,
) -> Event:
    return Event(
        agent_id=episode.agent_id,
        kind=MemoryKind.EPISODE,
        memory_id=episode.id,
        event=event,
        decided_by=decided_by,
        at=now,
        reason=reason,
        score=score,
        related_id=related_id,
        details=details or {},
    )


def started_event(row: Mapping[str, Any], now: datetime) -> Event:
    """The event of a new episode (``row`` as ``new_row`` makes it)."""
    return Event(
        agent_id=row["agent_id"],
        kind=MemoryKind.EPISODE,
        memory_id=row["id"],
        event=EventKind.EPISODE_STARTED,
        decided_by=DecidedBy.CALLER,
        at=now,
    )


def reuse_event(agent_id: str, match: DuplicateMatch, session_id: str, now: datetime) -> Event:
    return Event(
        agent_id=agent_id,
        kind=MemoryKind.EPISODE,
        memory_id=match.id,
        event=EventKind.EPISODE_REUSED,
        decided_by=DecidedBy.RULE,
        at=now,
        reason=match.reason,
        score=max(match.overlap, match.similarity or 0.0),
        details={"session_id": session_id, "overlap": match.overlap},
    )


def admission_events(
    new: Episode, decision: Decision, plan: AdmissionPlan, details: dict[str, Any], now: datetime
) -> list[Event]:
    """The audit rows of an end: ended (by the caller), the admission decision (by rule or
    judge), and the change of the target, if any."""
    verdict = decision.verdict
    events = [
        episode_event(new, EventKind.EPISODE_ENDED, DecidedBy.CALLER, now, reason=new.outcome),
        episode_event(
            new,
            EVENT_OF[verdict.decision],
            decision.decided_by,
            now,
            reason=verdict.reason,
            score=decision.similarity,
            related_id=verdict.target_run_id,
            details=details,
        ),
    ]
    if plan.target_id is not None and plan.target_event is not None:
        events.append(
            _target_event(new.agent_id, plan.target_id, plan.target_event, new, decision, now)
        )
    return events


def _target_event(
    agent_id: str,
    target_id: uuid.UUID,
    event: EventKind,
    new: Episode,
    decision: Decision,
    now: datetime,
) -> Event:
    """The event on the episode a REPLACE superseded or a MERGE joined."""
    return Event(
        agent_id=agent_id,
        kind=MemoryKind.EPISODE,
        memory_id=target_id,
        event=event,
        decided_by=decision.decided_by,
        at=now,
        reason=decision.verdict.reason,
        score=decision.similarity,
        related_id=new.id,
        details={"decision": decision.verdict.decision.value, "canonical_id": _canon(new)},
    )


def _canon(new: Episode) -> str:
    return str(new.id if new.canonical else new.canonical_id)


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
