"""Facts: an index of each agent's preferences (``category = 'preference'``).

The context's ``user_traits`` node reads an agent's current preferences on every turn
that includes it, whatever the query's words (``context.traits``). Without an index that
read filtered the agent's whole partition by category; preferences are few among an
agent's facts, so the index is partial and small.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-29
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index(
        "ix_facts_agent_id_preference",
        "facts",
        ["agent_id", "status"],
        postgresql_where=sa.text("category = 'preference'"),
    )


def downgrade() -> None:
    op.drop_index("ix_facts_agent_id_preference", table_name="facts")
