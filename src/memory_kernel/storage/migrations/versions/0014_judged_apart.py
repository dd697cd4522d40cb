"""Events: allow ``judged_apart``, the audit row of a consolidation judge's "keep both".

An ambiguous case the judge decided to keep apart (a possible duplicate, a possible change
of value) was asked about again at every nightly run: the same most similar cases first,
so the others never reached the judge. The answer is now kept as an event on the case's
first fact (``related_id`` the second; ``details.members`` every fact of the case), and a
case already kept apart is not asked again (``consolidation.repository.judged_apart``).

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-29
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Frozen copies of the values at this revision: a migration must not change when the
# application's enums do.
EVENTS_0008 = (
    "learned", "reinforced", "superseded", "merged", "deprecated", "confidence_changed",
    "contradiction", "rejected", "embedded", "admission_add", "admission_not",
    "admission_replace", "admission_merge", "episode_started", "episode_reused",
    "episode_ended", "decision_recorded", "decision_started", "decision_finalized",
    "context_assembled", "decision_outcome",
)  # fmt: skip
EVENTS_0014 = (*EVENTS_0008, "judged_apart")
CONSTRAINT = "ck_memory_events_event"


def _in(column: str, values: Sequence[str]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


def upgrade() -> None:
    op.drop_constraint(CONSTRAINT, "memory_events", type_="check")
    op.create_check_constraint(CONSTRAINT, "memory_events", _in("event", EVENTS_0014))


def downgrade() -> None:
    # The judge's answers are kept (a round trip loses no row, docs/reliability.md): the
    # old rule comes back for new rows only, and upgrade() checks every row again.
    op.drop_constraint(CONSTRAINT, "memory_events", type_="check")
    op.create_check_constraint(
        CONSTRAINT, "memory_events", _in("event", EVENTS_0008), postgresql_not_valid=True
    )
