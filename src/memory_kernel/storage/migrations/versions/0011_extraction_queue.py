"""extraction_queue: the stored turns that wait for fact extraction.

``post_turn`` enqueues the exchange's turns in its own unit of work (one INSERT) when a fact
extractor is configured; the extraction worker, ``consolidate`` and
``MemoryKernel.extract_pending`` drain it (``heart/extraction``). A row names a stored turn
(``turns``, by ``(agent_id, turn_id)``) and keeps its own bookkeeping: ``due_at`` (when it
may be claimed next: at once, after a claim's lease, after a failure's backoff), ``claim``
(the token of the drain holding it), ``attempts`` and ``last_error``; a turn that failed
``max_attempts`` times gets ``parked_at`` and is kept, counted and shown by ``inspect``,
never retried by itself nor dropped. A row is deleted in the unit of work that learns its
facts, so no turn's facts are learned twice and none are lost.

Not partitioned: bookkeeping, not memory, small (rows live from a turn until the next
drain), always reached by agent.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-25
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import UUID

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "extraction_queue",
        sa.Column("agent_id", sa.Text(), nullable=False),
        sa.Column("turn_id", UUID(as_uuid=True), nullable=False),
        sa.Column("enqueued_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("due_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False, server_default=sa.text("0")),
        sa.Column("last_error", sa.Text()),
        sa.Column("claim", UUID(as_uuid=True)),
        sa.Column("parked_at", sa.DateTime(timezone=True)),
        sa.PrimaryKeyConstraint("agent_id", "turn_id", name="pk_extraction_queue"),
    )
    # The drains' listing: agents with a row due now (parked rows wait for a person).
    op.create_index(
        "ix_extraction_queue_due",
        "extraction_queue",
        ["due_at", "agent_id"],
        postgresql_where=sa.text("parked_at IS NULL"),
    )


def downgrade() -> None:
    # Work not done yet, not memory: below 0011 the turns stay stored, unextracted.
    op.drop_table("extraction_queue")
