"""The conversation's turns: every user message and assistant reply, searchable per agent.

Like the memory tables: LIST-partitioned by ``agent_id`` (small agents share the DEFAULT
partition; large ones are promoted to a partition of their own with a partial HNSW index),
a full-text column with a GIN index without pending list (see 0006), a partial btree over
the staged rows (see 0004) and a btree per episode (an episode's summary is built from its
turns when it ends).

A store whose embedder is already recorded gets the new ``embedding`` column typed with its
dimension here (``Database.bind_embedder`` types the columns only on a store's first open).

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-25
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from pgvector.sqlalchemy import Vector
from sqlalchemy.dialects.postgresql import JSONB, TSVECTOR, UUID

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Frozen copy of the searchable predicate at this revision (storage.search may change later).
SEARCHABLE = "embedding IS NOT NULL"


def upgrade() -> None:
    op.create_table(
        "turns",
        sa.Column("agent_id", sa.Text, nullable=False),
        sa.Column("id", UUID(as_uuid=True), nullable=False),
        sa.Column("session_id", sa.Text, nullable=False),
        sa.Column("episode_id", UUID(as_uuid=True)),
        sa.Column("role", sa.Text, nullable=False),
        sa.Column("content", sa.Text, nullable=False),
        sa.Column("seq", sa.SmallInteger, nullable=False, server_default=sa.text("0")),
        sa.Column("embedding", Vector()),
        sa.Column("indexed", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("metadata", JSONB, nullable=False, server_default=sa.text("'{}'::jsonb")),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column(
            "search_tsv",
            TSVECTOR,
            sa.Computed("to_tsvector('english', left(content, 65536))", persisted=True),
        ),
        sa.PrimaryKeyConstraint("agent_id", "id", name="pk_turns"),
        sa.CheckConstraint("role IN ('user', 'assistant')", name="ck_turns_role"),
        postgresql_partition_by="LIST (agent_id)",
    )
    op.execute("CREATE TABLE turns_default PARTITION OF turns DEFAULT")
    op.create_index(
        "ix_turns_search_tsv",
        "turns",
        ["search_tsv"],
        postgresql_using="gin",
        postgresql_with={"fastupdate": "off"},
    )
    op.create_index("ix_turns_agent_id_episode_id", "turns", ["agent_id", "episode_id"])
    op.create_index(
        "ix_turns_agent_id_staged",
        "turns",
        ["agent_id"],
        postgresql_where=sa.text(f"{SEARCHABLE} AND NOT indexed"),
    )
    dim = op.get_bind().execute(sa.text("SELECT embedder_dim FROM kernel_meta")).scalar()
    if dim is not None:
        op.execute(f"ALTER TABLE turns ALTER COLUMN embedding TYPE vector({int(dim)})")


def downgrade() -> None:
    # Promoted agents' partitions go with their parent; forget that they existed.
    op.execute("DELETE FROM agent_partitions WHERE table_name = 'turns'")
    op.drop_table("turns")
