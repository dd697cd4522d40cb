"""Full-text indexes without GIN's pending list (``fastupdate = off``).

With ``fastupdate`` on (Postgres's default) new rows' words go to an unsorted pending list
that every search of the index reads in full, until 4 MB of it or a vacuum merges it into
the index. After a few thousand learns a text lookup of one agent's facts took 11-20 ms
instead of 0.1-0.5 ms (12k facts: the exact-text check of facts stored without a vector ran
at 40 learns/s), and so did every full-text part of a search and of ``pre_turn``'s recall.
Off, each write puts its words into the index itself: +0.1-0.15 ms of database time per
episode start or end (benchmarks/episodes.py, same run) for reads that stay fast. The
smallest list Postgres allows (``gin_pending_list_limit = 64`` kB) was measured too: a
lookup still read up to 1.1 ms of backlog and learns of facts without a vector ran at half
the rate (800-980 vs 1,660-1,950 facts/s), with a merge of a few ms now and then.

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


def _recreate(options: dict[str, str]) -> None:
    for table in PARTITIONED:
        op.drop_index(f"ix_{table}_search_tsv", table_name=table)
        op.create_index(
            f"ix_{table}_search_tsv",
            table,
            ["search_tsv"],
            postgresql_using="gin",
            postgresql_with=options,
        )


def upgrade() -> None:
    _recreate({"fastupdate": "off"})


def downgrade() -> None:
    _recreate({})
