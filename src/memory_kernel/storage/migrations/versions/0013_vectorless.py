"""Turns, episodes and decisions stored without a vector: a partial index of each.

An embedder outage stores them without a vector (``Runtime.embed_or_none``) and the agent's
next ``consolidate`` embeds them (``consolidation/vectors_phase.py``); ``consolidate_all``
finds the agents that have some through these indexes. They hold only such rows, so they
are empty while the embedder is up; a write with its vector only evaluates their predicate. The
predicate is the one the consolidation reads (``consolidation.repository``): no vector, and
a letter or a digit in the text (a text without one never gets a vector).

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-29
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: Each table and the column its vector is made of.
_VECTORED = (("turns", "content"), ("episodes", "summary"), ("decisions", "description"))


def upgrade() -> None:
    for table, column in _VECTORED:
        op.create_index(
            f"ix_{table}_vectorless",
            table,
            ["agent_id"],
            postgresql_where=sa.text(f"embedding IS NULL AND {column} ~ '[[:alnum:]]'"),
        )


def downgrade() -> None:
    for table, _ in _VECTORED:
        op.drop_index(f"ix_{table}_vectorless", table_name=table)
