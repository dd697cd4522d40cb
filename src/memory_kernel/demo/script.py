"""The demo's scripted agent session and its fake LLM (no network).

The script is data: what the agent learns from its files, what the user says, in which
frame, and what the (fake) LLM answers. It replays the production incidents of the design
notes (``shared/seeds``): a spec status that changes, "show me status" asked twice,
"Done! ✅" and status dumps in a decision frame, the same decision taken again and again,
and a "Hey!"; and (issue 22) a knowledge update said in passing, late in a long message.
``Wait`` steps move the demo's clock, so dedup windows and recency are real.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import timedelta

__all__ = [
    "NOISE_TURNS",
    "SAME_DECISION_TURNS",
    "SCRIPT",
    "SYNC_NEW",
    "SYNC_OLD",
    "Learn",
    "ScriptedLLM",
    "Step",
    "Turn",
    "Wait",
    "turns",
]


@dataclass(frozen=True, slots=True)
class Learn:
    """The agent read a file and learned a fact (``kernel.heart.facts.learn``)."""

    key: str
    content: str
    subject: str | None = None
    source: str = ""


@dataclass(frozen=True, slots=True)
class Turn:
    """A user message, the frame the host picked, and what the fake LLM will answer."""

    key: str
    session_id: str
    message: str
    reply: str
    frame: str | None = None
    mode: str = "RESPOND"
    #: The confidence the model states for the decision of a deliberating turn; ``None``:
    #: the kernel derives one from its quality gate's score (always above passive recall's 0.5).
    confidence: float | None = None


@dataclass(frozen=True, slots=True)
class Wait:
    delta: timedelta


Step = Learn | Turn | Wait

_STATUS = "Show me your current status"
#: A value said once, then changed late in a long message on another day: what the host's
#: next question must see as current (the newer value) and dated (the older one).
SYNC_OLD, SYNC_NEW = "Tuesdays at 10:00", "Thursdays at 15:00"
_LONG_UPDATE = (
    "Morning! Long one, sorry. I went through the review of Monday's outage: the root cause "
    "was the connection pool running dry when the nightly batch overlapped with the backfill, "
    "so we're adding a pool limit per job and an alert on the wait time. Priya is writing the "
    "runbook and wants a review by Friday. The customer email went out and support says the "
    "replies are calm so far. Also a scheduling change: from next week the weekly sync with "
    f"the platform team is on {SYNC_NEW}, because half of that team works from Lisbon early "
    "in the week now. Can you draft three bullet points for the outage summary?"
)
_STORAGE_Q = "Should we store embeddings in Postgres or in a separate vector database?"

SCRIPT: tuple[Step, ...] = (
    Learn("spec-planned", "Spec 006 status: PLANNED", "spec 006 status", "specs/006.md"),
    Learn("deploys", "The team deploys to production on Fridays", "deploy day", "TEAM.md"),
    Learn("language", "The user prefers Python for backend work", "backend language", "notes"),
    Learn("staging", "Staging runs on a single small VM", "staging host", "infra/README.md"),
    Turn(
        "status-1", "s1", _STATUS,
        "Here's my full live status: 3 tasks open, spec 006 is PLANNED, CI is green.",
        frame="decision",
    ),
    Wait(timedelta(minutes=2)),
    Turn(
        "status-2", "s1", _STATUS,
        "Here's my current status: 3 tasks open, spec 006 is PLANNED, CI is green.",
        frame="decision",
    ),
    Wait(timedelta(minutes=3)),
    Turn("done", "s1", "Deploy the hotfix to staging", "Done! ✅", frame="decision"),
    Wait(timedelta(minutes=1)),
    Turn("on-it", "s1", "Start the database migration", "On it! 🚀", frame="decision"),
    Wait(timedelta(minutes=1)),
    Turn(
        "sync-said", "s1",
        f"Note for later: our weekly sync with the platform team is on {SYNC_OLD}.",
        f"Noted: the weekly platform sync is on {SYNC_OLD}.", frame="conversation",
    ),
    Wait(timedelta(minutes=10)),
    Learn("spec-shipped", "Spec 006 status: Shipped", "spec 006 status", "specs/006.md"),
    Turn(
        "decide", "s1", _STORAGE_Q,
        "We'll use PostgreSQL with pgvector rather than a separate vector database, because "
        "it keeps transactions and embeddings in one place.",
        frame="decision",
    ),
    Wait(timedelta(minutes=1)),
    Turn(
        "decide-again", "s1",
        "Should we store the embeddings in Postgres or a separate vector database?",
        "We'll use PostgreSQL with pgvector rather than a separate vector database, so "
        "transactions and embeddings stay in one place.",
        frame="decision",
    ),
    Wait(timedelta(days=1)),
    Turn(
        "decide-day-2", "s2", "Where should the memory store keep its embeddings?",
        "We'll use PostgreSQL with pgvector rather than a separate vector database for the "
        "embeddings.",
        frame="decision",
    ),
    Wait(timedelta(hours=1)),
    Turn(
        "sync-moved", "s2", _LONG_UPDATE,
        "- Cause: the pool ran dry when the batch and the backfill overlapped.\n- Fix: a pool "
        "limit per job, an alert on the wait time.\n- Next: Priya's runbook, review by Friday.",
        frame="conversation",
    ),
    Wait(timedelta(days=1)),
    Turn(
        "decide-day-3", "s3", "Do we need a dedicated vector database for embeddings?",
        "We'll use PostgreSQL with pgvector rather than a dedicated vector database, because "
        "it keeps embeddings and transactions in one place.",
        frame="decision",
    ),
    Wait(timedelta(hours=2)),
    Turn(
        "ask-db", "s4", "Which database do we use for embeddings?",
        "PostgreSQL with pgvector.", frame="question",
    ),
    Wait(timedelta(minutes=1)),
    Turn(
        "ask-006", "s4", "What is the status of spec 006?",
        "Spec 006 has shipped.", frame="question",
    ),
    Wait(timedelta(minutes=1)),
    Turn(
        "ask-sync", "s4", "When is our weekly sync with the platform team?",
        f"The weekly platform sync is on {SYNC_NEW}.", frame="question",
    ),
    Wait(timedelta(minutes=1)),
    Turn("hey", "s4", "Hey!", "Hi! What are we working on today?", frame="conversation"),
)  # fmt: skip

#: The turns whose replies are noise, not decisions (the gate's layer 1 must reject them).
NOISE_TURNS = ("status-1", "status-2", "done", "on-it")
#: The same decision taken again: in the session (layer 2) and on later days (recall dedup).
SAME_DECISION_TURNS = ("decide", "decide-again", "decide-day-2", "decide-day-3")


@dataclass
class ScriptedLLM:
    """A fake LLM: answers each turn with the script's reply and keeps the prompts it saw
    (so the demo can show what each memory put in front of the model)."""

    prompts: list[str] = field(default_factory=list)

    async def complete(self, *, system: str, message: str, turn: Turn) -> str:
        self.prompts.append(f"{system}\n\nuser: {message}")
        return turn.reply


def turns(script: Iterable[Step] = SCRIPT) -> list[Turn]:
    return [s for s in script if isinstance(s, Turn)]
