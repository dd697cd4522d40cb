"""Decisions get an outcome: ``decisions.outcome`` holds success, failure or partial (or
nothing: pending), and ``memory_events`` allows ``decision_outcome``, the audit row of each
outcome recorded (with the caller's note as its reason).

The ``outcome`` column has been there since the first revision; nothing wrote it. The check
constraint makes the three values the only ones, as for ``stakes``.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-24
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Frozen copies of the values at this revision: a migration must not change when the
# application's enums do.
EVENTS_0003 = (
    "learned", "reinforced", "superseded", "merged", "deprecated", "confidence_changed",
    "contradiction", "rejected", "embedded", "admission_add", "admission_not",
    "admission_replace", "admission_merge", "episode_started", "episode_reused",
    "episode_ended", "decision_recorded", "decision_started", "decision_finalized",
    "context_assembled",
)  # fmt: skip
EVENTS_0008 = (*EVENTS_0003, "decision_outcome")
OUTCOMES = ("success", "failure", "partial")
EVENT_CONSTRAINT = "ck_memory_events_event"
OUTCOME_CONSTRAINT = "ck_decisions_outcome"


def _in(column: str, values: Sequence[str]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


def upgrade() -> None:
    op.drop_constraint(EVENT_CONSTRAINT, "memory_events", type_="check")
    # NOT VALID: after a round trip below this revision the table may hold events of kinds
    # a later revision added (0014: judged_apart); the later revision's own rule, created
    # valid on the way up, is the one that checks every row.
    op.create_check_constraint(
        EVENT_CONSTRAINT, "memory_events", _in("event", EVENTS_0008), postgresql_not_valid=True
    )
    # On the partitioned table: every partition gets it, and partitions attached later too.
    op.create_check_constraint(
        OUTCOME_CONSTRAINT, "decisions", f"outcome IS NULL OR {_in('outcome', OUTCOMES)}"
    )


def downgrade() -> None:
    # Outcomes and their events are kept (a round trip loses no row, docs/reliability.md):
    # the column stays as it was at 0007, and the old event rule comes back for new rows
    # only — NOT VALID skips the rows already there — and upgrade() checks every row again.
    op.drop_constraint(OUTCOME_CONSTRAINT, "decisions", type_="check")
    op.drop_constraint(EVENT_CONSTRAINT, "memory_events", type_="check")
    op.create_check_constraint(
        EVENT_CONSTRAINT, "memory_events", _in("event", EVENTS_0003), postgresql_not_valid=True
    )
