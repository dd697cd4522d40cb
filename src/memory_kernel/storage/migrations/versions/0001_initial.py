"""Initial schema: facts, episodes, decisions (partitioned by agent), memory_events, meta.

Revision ID: 0001
Revises:
Create Date: 2026-11-21
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from pgvector.sqlalchemy import Vector
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, TSVECTOR, UUID

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Frozen copies of the enum values at this revision: a migration must not change when the
# application's enums do.
FACT_STATUS = ("pending_embed", "active", "superseded", "merged", "deprecated", "rejected")
EPISODE_STATUS = ("ongoing", "completed", "abandoned")
ADMISSION = ("pending", "active", "not_admitted", "superseded")
STAKES = ("low", "medium", "high", "critical")
KINDS = ("fact", "episode", "decision")
DECIDED_BY = ("rule", "judge", "caller", "system")
EVENTS = (
    "learned", "reinforced", "superseded", "merged", "deprecated", "confidence_changed",
    "contradiction", "rejected", "embedded", "admission_add", "admission_not",
    "admission_replace", "admission_merge", "episode_started", "episode_reused",
    "episode_ended", "decision_recorded", "decision_started", "decision_finalized",
)  # fmt: skip
PARTITIONED = ("facts", "episodes", "decisions")


def _in(column: str, values: Sequence[str]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


def _ts(name: str, *, nullable: bool = False) -> sa.Column[object]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def _common_head() -> list[sa.Column[object]]:
    return [
        sa.Column("agent_id", sa.Text, nullable=False),
        sa.Column("id", UUID(as_uuid=True), nullable=False),
    ]


def _tsv(source: str) -> sa.Column[object]:
    return sa.Column(
        "search_tsv", TSVECTOR, sa.Computed(f"to_tsvector('english', {source})", persisted=True)
    )


def _jsonb(name: str, default: str) -> sa.Column[object]:
    return sa.Column(name, JSONB, nullable=False, server_default=sa.text(f"'{default}'::jsonb"))


def upgrade() -> None:
    op.create_table(
        "facts",
        *_common_head(),
        sa.Column("subject", sa.Text),
        sa.Column("subject_key", sa.Text),
        sa.Column("content", sa.Text, nullable=False),
        sa.Column("category", sa.Text),
        sa.Column("confidence", sa.Float, nullable=False),
        sa.Column("status", sa.Text, nullable=False),
        sa.Column("explicit", sa.Boolean, nullable=False, server_default=sa.text("false")),
        sa.Column("embedding", Vector()),
        sa.Column("superseded_by", UUID(as_uuid=True)),
        sa.Column("merged_into", UUID(as_uuid=True)),
        sa.Column("contradicts", ARRAY(UUID(as_uuid=True)), nullable=False, server_default="{}"),
        sa.Column("derived_from", ARRAY(UUID(as_uuid=True)), nullable=False, server_default="{}"),
        sa.Column("evidence_count", sa.Integer, nullable=False, server_default=sa.text("1")),
        _ts("last_evidence_at"),
        _ts("valid_from"),
        _ts("valid_to", nullable=True),
        _jsonb("metadata", "{}"),
        _ts("created_at"),
        _ts("updated_at"),
        _tsv("content"),
        sa.PrimaryKeyConstraint("agent_id", "id", name="pk_facts"),
        sa.CheckConstraint(_in("status", FACT_STATUS), name="ck_facts_status"),
        sa.CheckConstraint("confidence >= 0 AND confidence <= 1", name="ck_facts_confidence"),
        postgresql_partition_by="LIST (agent_id)",
    )
    op.create_table(
        "episodes",
        *_common_head(),
        sa.Column("session_id", sa.Text, nullable=False),
        sa.Column("summary", sa.Text, nullable=False),
        sa.Column("status", sa.Text, nullable=False),
        sa.Column("outcome", sa.Text),
        sa.Column("admission", sa.Text, nullable=False),
        sa.Column("canonical", sa.Boolean, nullable=False, server_default=sa.text("true")),
        sa.Column("canonical_id", UUID(as_uuid=True)),
        sa.Column("superseded_by", UUID(as_uuid=True)),
        _jsonb("references", "[]"),
        _jsonb("artifacts", "[]"),
        sa.Column("usage_count", sa.Integer, nullable=False, server_default=sa.text("0")),
        sa.Column("embedding", Vector()),
        _ts("started_at"),
        _ts("ended_at", nullable=True),
        _jsonb("metadata", "{}"),
        _ts("created_at"),
        _ts("updated_at"),
        _tsv("summary"),
        sa.PrimaryKeyConstraint("agent_id", "id", name="pk_episodes"),
        sa.CheckConstraint(_in("status", EPISODE_STATUS), name="ck_episodes_status"),
        sa.CheckConstraint(_in("admission", ADMISSION), name="ck_episodes_admission"),
        postgresql_partition_by="LIST (agent_id)",
    )
    op.create_table(
        "decisions",
        *_common_head(),
        sa.Column("session_id", sa.Text, nullable=False),
        sa.Column("episode_id", UUID(as_uuid=True)),
        sa.Column("description", sa.Text, nullable=False),
        sa.Column("reasoning", sa.Text),
        sa.Column("confidence", sa.Float, nullable=False),
        sa.Column("stakes", sa.Text, nullable=False),
        sa.Column("category", sa.Text),
        sa.Column("outcome", sa.Text),
        sa.Column("frame", sa.Text),
        sa.Column("active", sa.Boolean, nullable=False, server_default=sa.text("true")),
        sa.Column("finalized", sa.Boolean, nullable=False, server_default=sa.text("false")),
        sa.Column("rejection_reason", sa.Text),
        sa.Column("embedding", Vector()),
        _jsonb("metadata", "{}"),
        _ts("created_at"),
        _ts("updated_at"),
        _tsv("description"),
        sa.PrimaryKeyConstraint("agent_id", "id", name="pk_decisions"),
        sa.CheckConstraint(_in("stakes", STAKES), name="ck_decisions_stakes"),
        sa.CheckConstraint("confidence >= 0 AND confidence <= 1", name="ck_decisions_confidence"),
        postgresql_partition_by="LIST (agent_id)",
    )
    for table in PARTITIONED:
        # Small agents share the default partition and are searched exactly; large ones are
        # moved to partitions of their own with an HNSW index at run time (partitions.py).
        op.execute(f"CREATE TABLE {table}_default PARTITION OF {table} DEFAULT")
        op.create_index(f"ix_{table}_search_tsv", table, ["search_tsv"], postgresql_using="gin")

    # Invariant 3: at most one current fact per (agent, subject), enforced by the database.
    op.create_index(
        "uq_facts_agent_id_subject_key",
        "facts",
        ["agent_id", "subject_key"],
        unique=True,
        postgresql_where=sa.text(
            "subject_key IS NOT NULL AND status IN ('active', 'pending_embed')"
        ),
    )
    op.create_index("ix_facts_agent_id_status", "facts", ["agent_id", "status"])
    op.create_index("ix_facts_agent_id_valid_from", "facts", ["agent_id", "valid_from"])
    op.create_index(
        "ix_episodes_agent_id_status_started_at", "episodes", ["agent_id", "status", "started_at"]
    )
    op.create_index("ix_episodes_agent_id_admission", "episodes", ["agent_id", "admission"])
    op.create_index(
        "ix_decisions_agent_id_session_id_created_at",
        "decisions",
        ["agent_id", "session_id", "created_at"],
    )
    op.create_index("ix_decisions_agent_id_active", "decisions", ["agent_id", "active"])

    op.create_table(
        "memory_events",
        *_common_head(),
        sa.Column("memory_kind", sa.Text, nullable=False),
        sa.Column("memory_id", UUID(as_uuid=True), nullable=False),
        sa.Column("event", sa.Text, nullable=False),
        sa.Column("reason", sa.Text),
        sa.Column("score", sa.Float),
        sa.Column("decided_by", sa.Text, nullable=False),
        sa.Column("related_id", UUID(as_uuid=True)),
        _jsonb("details", "{}"),
        _ts("created_at"),
        sa.PrimaryKeyConstraint("agent_id", "id", name="pk_memory_events"),
        sa.CheckConstraint(_in("memory_kind", KINDS), name="ck_memory_events_memory_kind"),
        sa.CheckConstraint(_in("event", EVENTS), name="ck_memory_events_event"),
        sa.CheckConstraint(_in("decided_by", DECIDED_BY), name="ck_memory_events_decided_by"),
    )
    op.create_index(
        "ix_memory_events_agent_id_memory_id", "memory_events", ["agent_id", "memory_id"]
    )
    op.create_index(
        "ix_memory_events_agent_id_created_at", "memory_events", ["agent_id", "created_at"]
    )

    op.create_table(
        "kernel_meta",
        sa.Column("id", sa.SmallInteger, primary_key=True),
        sa.Column("embedder_name", sa.Text),
        sa.Column("embedder_dim", sa.Integer),
        _ts("created_at"),
        _ts("updated_at"),
        sa.CheckConstraint("id = 1", name="ck_kernel_meta_single_row"),
    )
    op.create_table(
        "agent_partitions",
        sa.Column("agent_id", sa.Text, nullable=False),
        sa.Column("table_name", sa.Text, nullable=False),
        sa.Column("partition_name", sa.Text, nullable=False),
        sa.Column("rows_at_promotion", sa.Integer, nullable=False),
        _ts("created_at"),
        sa.PrimaryKeyConstraint("agent_id", "table_name", name="pk_agent_partitions"),
    )


def downgrade() -> None:
    # Dropping a partitioned parent drops its partitions, the per-agent ones included.
    for table in ("agent_partitions", "kernel_meta", "memory_events", *PARTITIONED):
        op.drop_table(table)
