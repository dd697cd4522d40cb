"""Events: allow ``context_assembled`` on memory_events, so post_turn can keep the turn's
context report (what was injected, skipped and why) for ``memory-kernel inspect``.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Frozen copies of the event values before and at this revision: a migration must not change
# when the application's enums do.
EVENTS_0002 = (
    "learned", "reinforced", "superseded", "merged", "deprecated", "confidence_changed",
    "contradiction", "rejected", "embedded", "admission_add", "admission_not",
    "admission_replace", "admission_merge", "episode_started", "episode_reused",
    "episode_ended", "decision_recorded", "decision_started", "decision_finalized",
)  # fmt: skip
EVENTS_0003 = (*EVENTS_0002, "context_assembled")
CONSTRAINT = "ck_memory_events_event"


def _in(column: str, values: Sequence[str]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


def upgrade() -> None:
    op.drop_constraint(CONSTRAINT, "memory_events", type_="check")
    # NOT VALID: after a round trip below this revision the table may hold events of kinds
    # a later revision added (0008: decision_outcome); the later revision's own rule, created
    # valid on the way up, is the one that checks every row.
    op.create_check_constraint(
        CONSTRAINT, "memory_events", _in("event", EVENTS_0003), postgresql_not_valid=True
    )


def downgrade() -> None:
    # The context reports written since are kept (a round trip loses no row,
    # docs/reliability.md): the old rule comes back for new rows only — NOT VALID skips the
    # rows already there — and the way up checks every row again (at the newest revision
    # that widens the rule).
    op.drop_constraint(CONSTRAINT, "memory_events", type_="check")
    op.create_check_constraint(
        CONSTRAINT, "memory_events", _in("event", EVENTS_0002), postgresql_not_valid=True
    )
