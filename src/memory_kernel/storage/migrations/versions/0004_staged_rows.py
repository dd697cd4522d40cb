"""Facts and episodes: staged rows outside the HNSW index (``indexed``), searched exactly.

A new row is written with ``indexed = false`` and stays out of its agent partition's HNSW
index (whose predicate gains ``AND indexed``) until the indexer moves it in, so a write no
longer waits for an HNSW insert. Rows that exist at the upgrade are in their index already:
they get ``true``. A partial btree finds an agent's staged rows for the exact tier.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-24
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Frozen copies of the predicates at this revision (storage.search may change later).
SEARCHABLE = {
    "facts": "status = 'active' AND embedding IS NOT NULL",
    "episodes": "admission = 'active' AND embedding IS NOT NULL",
}


_CREATE = (
    "SELECT format('CREATE INDEX %I ON %I USING hnsw (embedding vector_cosine_ops)',"
    " CAST(:i AS text), CAST(:p AS text))"
)
_DROP = "SELECT format('DROP INDEX IF EXISTS %I', CAST(:i AS text))"


def _rebuild_hnsw(table: str, predicate: str) -> None:
    """Re-create every agent partition's HNSW index of ``table`` with ``predicate``, keeping
    its build options (m, ef_construction)."""
    bind = op.get_bind()
    partitions = (
        bind.execute(
            sa.text("SELECT partition_name FROM agent_partitions WHERE table_name = :t"),
            {"t": table},
        )
        .scalars()
        .all()
    )
    for partition in partitions:
        index = f"{partition}_hnsw"
        options = bind.execute(
            sa.text(
                "SELECT array_to_string(c.reloptions, ', ') FROM pg_class c"
                " WHERE c.oid = to_regclass(:name)"
            ),
            {"name": index},
        ).scalar()
        with_options = f" WITH ({options})" if options else ""
        # Names come from agent_partitions (table name + hex digest), quoted by format(%I).
        drop = bind.execute(
            sa.text("SELECT format('DROP INDEX IF EXISTS %I', CAST(:i AS text))"), {"i": index}
        )
        op.execute(sa.text(drop.scalar_one()))
        create = bind.execute(sa.text(_CREATE), {"i": index, "p": partition}).scalar_one()
        op.execute(sa.text(f"{create}{with_options} WHERE {predicate}"))


def upgrade() -> None:
    for table, searchable in SEARCHABLE.items():
        # Existing rows are in their index: true (a fast default), new rows: false.
        op.add_column(
            table, sa.Column("indexed", sa.Boolean(), nullable=False, server_default=sa.true())
        )
        op.alter_column(table, "indexed", server_default=sa.false())
        op.create_index(
            f"ix_{table}_agent_id_staged",
            table,
            ["agent_id"],
            postgresql_where=sa.text(f"{searchable} AND NOT indexed"),
        )
        _rebuild_hnsw(table, f"{searchable} AND indexed")
        # Statistics for the new column: without them the planner guesses half the rows are
        # staged and plans the staged tier for thousands of rows instead of a few.
        op.execute(sa.text(f"ANALYZE {table} (indexed)"))


def downgrade() -> None:
    for table, searchable in SEARCHABLE.items():
        _rebuild_hnsw(table, searchable)  # every searchable row, staged ones included
        op.drop_index(f"ix_{table}_agent_id_staged", table_name=table)
        op.drop_column(table, "indexed")
