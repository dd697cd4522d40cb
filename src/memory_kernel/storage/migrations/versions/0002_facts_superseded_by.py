"""Facts: index the supersession pointer, so history walks a chain backwards by index.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # history() asks "which facts did this one supersede?" (superseded_by = id); without an
    # index that is a scan of the agent's partition per hop. Partial: most facts are current.
    op.create_index(
        "ix_facts_agent_id_superseded_by",
        "facts",
        ["agent_id", "superseded_by"],
        postgresql_where=sa.text("superseded_by IS NOT NULL"),
    )


def downgrade() -> None:
    op.drop_index("ix_facts_agent_id_superseded_by", table_name="facts")
