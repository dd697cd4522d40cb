"""Episodes: an index of merge groups (``canonical_id``).

A REPLACE of a group's head repoints the group's members to the new head (``UPDATE ...
WHERE canonical_id = old head``). Without an index that update scanned the agent's whole
partition: 4-8 ms at 10k episodes (``benchmarks/episodes.py``), growing with the store. Only
merged episodes carry a ``canonical_id``: the index is partial and small.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-22
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index(
        "ix_episodes_agent_id_canonical_id",
        "episodes",
        ["agent_id", "canonical_id"],
        postgresql_where=sa.text("canonical_id IS NOT NULL"),
    )


def downgrade() -> None:
    op.drop_index("ix_episodes_agent_id_canonical_id", table_name="episodes")
