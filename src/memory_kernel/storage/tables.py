"""The tables, as SQLAlchemy Core objects.

Tables are unqualified: every connection sets ``search_path`` to the configured schema (then
``public``, where pgvector's type lives), so one set of objects serves any schema name.

The memory tables and the conversation's turns are LIST-partitioned by ``agent_id``: small
agents share the DEFAULT partition (searched exactly), large agents get a partition of their
own with an HNSW index (see ``storage/partitions.py``). Every unique constraint and index
therefore includes ``agent_id`` — which is also what distributing the tables by
``agent_id`` on Citus needs.
"""

from __future__ import annotations

from sqlalchemy import (
    Boolean,
    CheckConstraint,
    Column,
    Computed,
    DateTime,
    Float,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    SmallInteger,
    Table,
    Text,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, TSVECTOR, UUID

from memory_kernel.models.enums import (
    AdmissionStatus,
    DecidedBy,
    DecisionOutcome,
    EpisodeStatus,
    EventKind,
    FactStatus,
    MemoryKind,
    Stakes,
)
from memory_kernel.storage.vector import Vector

# Stable constraint names keep migrations reproducible (advanced-alchemy's convention).
NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

metadata = MetaData(naming_convention=NAMING_CONVENTION)

#: The tables that hold vectors and are partitioned by agent.
PARTITIONED_TABLES = ("facts", "episodes", "decisions", "turns")
#: The column each of them makes its vector of (a turn: its first ``EMBED_CHARS``
#: characters, ``heart.turns.policy.vector_input``).
EMBEDDED_TEXT = {"facts": "content", "episodes": "summary", "decisions": "description",
                 "turns": "content"}  # fmt: skip


def _in(column: str, values: type[object]) -> str:
    members = ", ".join(f"'{v}'" for v in values)  # type: ignore[attr-defined]
    return f"{column} IN ({members})"


def _uuid_pk() -> list[Column[object]]:
    return [
        Column("agent_id", Text, nullable=False),
        Column("id", UUID(as_uuid=True), nullable=False),
    ]


def _timestamps() -> list[Column[object]]:
    return [
        Column("created_at", DateTime(timezone=True), nullable=False),
        Column("updated_at", DateTime(timezone=True), nullable=False),
    ]


def _tsv(source: str) -> Column[object]:
    # Full-text side of hybrid recall and the text fallback for rows still waiting for a vector.
    return Column("search_tsv", TSVECTOR, Computed(f"to_tsvector('english', {source})"))


facts = Table(
    "facts",
    metadata,
    *_uuid_pk(),
    Column("subject", Text),
    Column("subject_key", Text),
    Column("content", Text, nullable=False),
    Column("category", Text),
    Column("confidence", Float, nullable=False),
    Column("status", Text, nullable=False),
    Column("explicit", Boolean, nullable=False, server_default=text("false")),
    Column("embedding", Vector()),
    # False until the row is in its agent partition's HNSW index (storage.search.tiers).
    Column("indexed", Boolean, nullable=False, server_default=text("false")),
    Column("superseded_by", UUID(as_uuid=True)),
    Column("merged_into", UUID(as_uuid=True)),
    Column("contradicts", ARRAY(UUID(as_uuid=True)), nullable=False, server_default="{}"),
    Column("derived_from", ARRAY(UUID(as_uuid=True)), nullable=False, server_default="{}"),
    Column("evidence_count", Integer, nullable=False, server_default=text("1")),
    Column("last_evidence_at", DateTime(timezone=True), nullable=False),
    Column("valid_from", DateTime(timezone=True), nullable=False),
    Column("valid_to", DateTime(timezone=True)),
    Column("metadata", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
    *_timestamps(),
    _tsv("content"),
    PrimaryKeyConstraint("agent_id", "id"),
    CheckConstraint(_in("status", FactStatus), name="status"),
    CheckConstraint("confidence >= 0 AND confidence <= 1", name="confidence"),
    postgresql_partition_by="LIST (agent_id)",
)

episodes = Table(
    "episodes",
    metadata,
    *_uuid_pk(),
    Column("session_id", Text, nullable=False),
    Column("summary", Text, nullable=False),
    Column("status", Text, nullable=False),
    Column("outcome", Text),
    Column("admission", Text, nullable=False),
    Column("canonical", Boolean, nullable=False, server_default=text("true")),
    Column("canonical_id", UUID(as_uuid=True)),
    Column("superseded_by", UUID(as_uuid=True)),
    Column("references", JSONB, nullable=False, server_default=text("'[]'::jsonb")),
    Column("artifacts", JSONB, nullable=False, server_default=text("'[]'::jsonb")),
    Column("usage_count", Integer, nullable=False, server_default=text("0")),
    Column("embedding", Vector()),
    # False until the row is in its agent partition's HNSW index (storage.search.tiers).
    Column("indexed", Boolean, nullable=False, server_default=text("false")),
    Column("started_at", DateTime(timezone=True), nullable=False),
    Column("ended_at", DateTime(timezone=True)),
    Column("metadata", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
    *_timestamps(),
    _tsv("summary"),
    PrimaryKeyConstraint("agent_id", "id"),
    CheckConstraint(_in("status", EpisodeStatus), name="status"),
    CheckConstraint(_in("admission", AdmissionStatus), name="admission"),
    postgresql_partition_by="LIST (agent_id)",
)

decisions = Table(
    "decisions",
    metadata,
    *_uuid_pk(),
    Column("session_id", Text, nullable=False),
    Column("episode_id", UUID(as_uuid=True)),
    Column("description", Text, nullable=False),
    Column("reasoning", Text),
    Column("confidence", Float, nullable=False),
    Column("stakes", Text, nullable=False),
    Column("category", Text),
    Column("outcome", Text),
    Column("frame", Text),
    Column("active", Boolean, nullable=False, server_default=text("true")),
    Column("finalized", Boolean, nullable=False, server_default=text("false")),
    Column("rejection_reason", Text),
    Column("embedding", Vector()),
    Column("metadata", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
    *_timestamps(),
    _tsv("description"),
    PrimaryKeyConstraint("agent_id", "id"),
    CheckConstraint(_in("stakes", Stakes), name="stakes"),
    CheckConstraint("outcome IS NULL OR " + _in("outcome", DecisionOutcome), name="outcome"),
    CheckConstraint("confidence >= 0 AND confidence <= 1", name="confidence"),
    postgresql_partition_by="LIST (agent_id)",
)

# The conversation itself: every user message and assistant reply the hooks saw, with the
# turn's time. Written once by ``post_turn`` and never changed (so no audit rows: nothing
# about a turn is ever decided); searched by recall like the memories.
turns = Table(
    "turns",
    metadata,
    *_uuid_pk(),
    Column("session_id", Text, nullable=False),
    Column("episode_id", UUID(as_uuid=True)),
    Column("role", Text, nullable=False),
    Column("content", Text, nullable=False),
    # 0 for the user's message, 1 for the reply: the order of an exchange's two rows.
    Column("seq", SmallInteger, nullable=False, server_default=text("0")),
    Column("embedding", Vector()),
    # False until the row is in its agent partition's HNSW index (storage.search.tiers).
    Column("indexed", Boolean, nullable=False, server_default=text("false")),
    Column("metadata", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
    Column("created_at", DateTime(timezone=True), nullable=False),
    # A pasted document is stored whole, but only its first 64k characters are indexed
    # for words: a tsvector holds at most 1 MB.
    Column(
        "search_tsv",
        TSVECTOR,
        Computed("to_tsvector('english', left(content, 65536))"),
    ),
    PrimaryKeyConstraint("agent_id", "id"),
    CheckConstraint("role IN ('user', 'assistant')", name="role"),
    postgresql_partition_by="LIST (agent_id)",
)

memory_events = Table(
    "memory_events",
    metadata,
    *_uuid_pk(),
    Column("memory_kind", Text, nullable=False),
    Column("memory_id", UUID(as_uuid=True), nullable=False),
    Column("event", Text, nullable=False),
    Column("reason", Text),
    Column("score", Float),
    Column("decided_by", Text, nullable=False),
    Column("related_id", UUID(as_uuid=True)),
    Column("details", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
    Column("created_at", DateTime(timezone=True), nullable=False),
    PrimaryKeyConstraint("agent_id", "id"),
    CheckConstraint(_in("memory_kind", MemoryKind), name="memory_kind"),
    CheckConstraint(_in("event", EventKind), name="event"),
    CheckConstraint(_in("decided_by", DecidedBy), name="decided_by"),
)

# Global, one row: the embedder the stored vectors were made with (invariant 5).
kernel_meta = Table(
    "kernel_meta",
    metadata,
    Column("id", SmallInteger, primary_key=True),
    Column("embedder_name", Text),
    Column("embedder_dim", Integer),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
    CheckConstraint("id = 1", name="single_row"),
)

# Which agents have a partition of their own, per table.
agent_partitions = Table(
    "agent_partitions",
    metadata,
    Column("agent_id", Text, nullable=False),
    Column("table_name", Text, nullable=False),
    Column("partition_name", Text, nullable=False),
    Column("rows_at_promotion", Integer, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    PrimaryKeyConstraint("agent_id", "table_name"),
)

# What post_turn recorded for each turn (``TurnHandle.turn_id``): a repeat of the handle
# returns this instead of recording the turn again. Bookkeeping, not memory: one small row
# per turn, keyed by agent so one agent's turn ids never meet another's. ``result`` is NULL
# only inside the post_turn that claimed the row (the claim and the result commit together).
turn_results = Table(
    "turn_results",
    metadata,
    Column("agent_id", Text, nullable=False),
    Column("turn_id", UUID(as_uuid=True), nullable=False),
    Column("result", JSONB),
    Column("created_at", DateTime(timezone=True), nullable=False),
    PrimaryKeyConstraint("agent_id", "turn_id"),
)

# The stored turns waiting for fact extraction (``heart/extraction``): one row per turn,
# deleted in the unit of work that learns its facts. ``due_at``: when a drain may claim it
# (a claim's lease, a failure's backoff push it on); ``parked_at``: set after the last
# allowed failure (kept and counted, never retried by itself).
extraction_queue = Table(
    "extraction_queue",
    metadata,
    Column("agent_id", Text, nullable=False),
    Column("turn_id", UUID(as_uuid=True), nullable=False),
    Column("enqueued_at", DateTime(timezone=True), nullable=False),
    Column("due_at", DateTime(timezone=True), nullable=False),
    Column("attempts", Integer, nullable=False, server_default=text("0")),
    Column("last_error", Text),
    Column("claim", UUID(as_uuid=True)),
    Column("parked_at", DateTime(timezone=True)),
    PrimaryKeyConstraint("agent_id", "turn_id"),
)
