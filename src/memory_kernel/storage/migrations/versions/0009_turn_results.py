"""turn_results: what post_turn recorded for each turn, so a repeated handle is recorded once.

A host may post the same ``TurnHandle`` twice — a retry after a timeout whose commit went
through, a re-run LangGraph node, a queue delivering twice — and each post recorded its
explicit decisions and counted the turn again. ``post_turn`` now claims ``(agent_id,
turn_id)`` first in its unit (``INSERT … ON CONFLICT DO NOTHING``: a concurrent post of the
same handle waits on the primary key) and stores its result with its writes; a repeat
returns the stored result and writes nothing.

Not partitioned: one small row per turn, always reached by its primary key.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-24
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB, UUID

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "turn_results",
        sa.Column("agent_id", sa.Text(), nullable=False),
        sa.Column("turn_id", UUID(as_uuid=True), nullable=False),
        sa.Column("result", JSONB(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("agent_id", "turn_id", name="pk_turn_results"),
    )


def downgrade() -> None:
    # Bookkeeping only: without it a repeated handle is recorded again, as before 0008.
    op.drop_table("turn_results")
