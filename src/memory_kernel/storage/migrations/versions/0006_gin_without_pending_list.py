"""Full-text indexes without GIN's pending list (``fastupdate = off``).

With ``fastupdate`` on (Postgres's default) new rows' words go to an unsorted pending list
that every search of the index reads in full, until a vacuum or 4 MB of it merges the list
into the index. After a few thousand learns a text lookup of one agent's facts took 11-20 ms
instead of 0.1-0.5 ms (measured on 12k facts: the exact-text check of facts stored without a
vector ran at 40 learns/s), and so did every full-text part of a search or of ``pre_turn``'s
recall. Off, each write inserts its words into the index itself: a steady cost per row
instead of a search that slows down as writes pile up.

A partitioned index takes no storage parameters after the fact, so each one is rebuilt:
``CREATE INDEX`` on the partitioned table builds every partition's index, and partitions
attached later copy the option. On a large store this rebuild takes a while (it blocks
writes of that table while it runs).

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-22
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Frozen copy: the tables with a ``search_tsv`` column at this revision.
PARTITIONED = ("facts", "episodes", "decisions")


def _recreate(fastupdate: bool) -> None:
    for table in PARTITIONED:
        op.drop_index(f"ix_{table}_search_tsv", table_name=table)
        op.create_index(
            f"ix_{table}_search_tsv",
            table,
            ["search_tsv"],
            postgresql_using="gin",
            postgresql_with={"fastupdate": "on" if fastupdate else "off"},
        )


def upgrade() -> None:
    _recreate(fastupdate=False)


def downgrade() -> None:
    _recreate(fastupdate=True)
