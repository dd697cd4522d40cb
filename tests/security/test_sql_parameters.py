"""All SQL takes values as bound parameters: a test that reads the source.

Any f-string, ``%`` or ``.format`` template in ``src/`` that looks like SQL is flagged
unless every value interpolated into it is on the list below — identifiers and numbers
the code itself controls (fixed table names, a hex digest, a validated schema name, an
``int``), each with the reason it is safe. Values from callers (agent ids, texts, vectors)
must never be interpolated: they go through bound parameters or Postgres ``format(%I/%L)``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "memory_kernel"
_SQL = re.compile(
    r"\b(SELECT|INSERT|UPDATE|DELETE|WHERE|ALTER|CREATE|DROP|FROM|JOIN|VALUES|TABLE|INDEX|"
    r"SET LOCAL|SET search_path|COPY|GRANT|TRUNCATE)\b"
)
# (file relative to src/memory_kernel, interpolated expression) -> why it cannot carry a value
ALLOWED: dict[tuple[str, str], str] = {
    ("eval/store.py", "schema"): "a throwaway schema name the eval harness generates",
    ("brain/store.py", "_IN_BAND"): "a constant predicate; its values are bound parameters",
    ("storage/database.py", "table"): "PARTITIONED_TABLES, a fixed tuple of table names",
    ("storage/database.py", "int(dim)"): "the embedder's dimension, forced to int",
    (
        "storage/migrations/versions/0010_turns.py",
        "int(dim)",
    ): "the embedder's dimension, forced to int",
    ("storage/database.py", "mapped"): "an error message that mentions CREATE EXTENSION",
    ("storage/migrate.py", "schema"): "StorageConfig.schema_name, validated as an identifier",
    ("storage/migrations/versions/0001_initial.py", "table"): "fixed table names",
    ("storage/partitions.py", "table"): "checked against PARTITIONED_TABLES (_check_table)",
    ("storage/partitions.py", "name"): "partition_name(): table name + a hex digest",
    ("storage/partitions.py", "columns"): "column names from the table metadata",
    ("storage/partitions.py", "config.hnsw_m"): "an int from the validated config (:d)",
    ("storage/partitions.py", "config.hnsw_ef_construction"): "an int (:d)",
    ("storage/partitions.py", "hnsw_predicate(table)"): "a fixed predicate per table",
    ("storage/partitions.py", "moved_values"): "column names from the table metadata, or true",
    ("storage/partitions.py", "placeholders"): "':a0, :a1...' bound-parameter names",
    ("storage/reembed.py", "table"): "PARTITIONED_TABLES, a fixed tuple of table names",
    ("storage/reembed.py", "dim"): "the new embedder's dimension, forced to int above",
    ("storage/reembed.py", "_TRIGGER"): "a constant function/trigger name",
    ("storage/reembed.py", "cfg.hnsw_m"): "an int from the validated config (:d)",
    ("storage/reembed.py", "cfg.hnsw_ef_construction"): "an int (:d)",
    ("storage/reembed.py", "', '.join(PARTITIONED_TABLES)"): "fixed table names",
    ("storage/reembed.py", "_SHADOW"): "a constant column name",
    ("storage/reembed.py", "index"): "an index name read from pg_indexes, quoted with %I",
    ("storage/reembed.py", "hnsw_predicate(table)"): "a fixed predicate per table",
    ("storage/reembed.py", "source"): "a fixed text column per table (_SOURCE)",
    ("storage/migrations/versions/0004_staged_rows.py", "create"): "built by format(%I)",
    ("storage/migrations/versions/0008_turns.py", "int(dim)"): "kernel_meta's dimension, an int",
    ("storage/migrations/versions/0004_staged_rows.py", "with_options"): "pg_class reloptions",
    ("storage/migrations/versions/0004_staged_rows.py", "predicate"): "frozen constant predicates",
    ("erasure/store.py", "table"): "checked against AGENT_TABLES, fixed table names",
    ("erasure/store.py", "partition_name(table, agent_id)"): (
        "partition_name(): a table of PARTITIONED_TABLES + a hex digest"
    ),
    ("storage/indexer.py", "partition"): "agent_partitions: partition_name(), a hex digest",
    ("storage/indexer.py", "staged"): "storage.search.tiers: a fixed predicate",
    ("heart/facts/store.py", "_NEAREST"): "storage.search.knn_sql over constants",
    ("heart/turns/store.py", "', '.join(keys)"): "the turns table's own column names (turns.c)",
    ("heart/turns/store.py", "rows"): "'(:<column>_<i>, ...)' bound-parameter names",
    ("heart/facts/store_write.py", "_NEW_NAMES"): "names of the facts table's own columns",
    ("heart/facts/store_write.py", "_NEW_VALUES"): "the facts table's own column names, types",
    ("heart/facts/store_write.py", "_NEW_ARRAYS"): ":i_<column> placeholders, column types",
    ("heart/facts/store_write.py", "_RETURNED"): "names of the facts table's own columns",
    ("heart/facts/store_write.py", "_FACT_NAMES"): "names of the facts table's own columns",
    ("consolidation/repository.py", "_NEAREST_FACTS"): "storage.search.knn_sql, constants",
    ("storage/locks.py", "lock_number(scope, agent_id)"): "a 64-bit int hashed from the id (:d)",
    ("heart/episodes/admission_store.py", "episode"): "quoted names of the table's own columns",
    ("heart/episodes/admission_store.py", "out"): "quoted names of the table's own columns",
    ("heart/episodes/admission_store.py", "search"): "storage.search.knn_sql over constants",
    ("storage/search.py", "table"): "the name of one of the kernel's own Table objects",
    ("storage/search.py", "selected"): "quoted names of that table's own columns",
    ("storage/search.py", "SEARCHABLE[table]"): "a fixed predicate per table",
    ("storage/search.py", "extra"): "own column names, fixed operators and $n placeholders",
    # knn_sql: fragments its callers write as constants (columns, $n / :name placeholders,
    # an outer alias's column), never values; each caller's use is vetted above.
    ("storage/search.py", "select"): "knn_sql: the caller's constant column list",
    ("storage/search.py", "vector"): "knn_sql: a placeholder or an outer column",
    ("storage/search.py", "agent"): "knn_sql: a placeholder",
    ("storage/search.py", "k"): "knn_sql: a placeholder",
    ("storage/search.py", "where"): "knn_sql: constant conditions with placeholders",
    ("storage/search.py", "tier"): "tiers(): fixed predicates per table",
    ("storage/search.py", "merged"): "knn_sql: the tiers' own subqueries",
}


def _templates(tree: ast.AST) -> list[tuple[int, list[str]]]:
    """(line, interpolated expressions) of every SQL-looking string template."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            literal = "".join(
                v.value
                for v in node.values
                if isinstance(v, ast.Constant) and isinstance(v.value, str)
            )
            if _SQL.search(literal):
                exprs = [
                    ast.unparse(v.value) for v in node.values if isinstance(v, ast.FormattedValue)
                ]
                found.append((node.lineno, exprs))
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod | ast.Add):
            sides = (node.left, node.right)
            sql = [x for x in sides if isinstance(x, ast.Constant) and _SQL.search(str(x.value))]
            dynamic = [x for x in sides if not isinstance(x, ast.Constant)]
            if sql and dynamic:
                found.append((node.lineno, ["<% or + formatting>"]))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            target = node.func.value
            if (
                node.func.attr == "format"
                and isinstance(target, ast.Constant)
                and isinstance(target.value, str)
                and _SQL.search(target.value)
            ):
                found.append((node.lineno, ["<str.format>"]))
    return found


def test_no_sql_is_built_from_values() -> None:
    offenders = []
    scanned = 0
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        for line, exprs in _templates(ast.parse(path.read_text(encoding="utf-8"))):
            scanned += 1
            offenders += [f"{rel}:{line}: {e}" for e in exprs if (rel, e) not in ALLOWED]
    assert scanned > 0, "the scan found no SQL templates at all: the detector is broken"
    assert not offenders, "SQL built from unvetted values (use bound parameters):\n" + "\n".join(
        offenders
    )


def test_the_detector_catches_value_interpolation() -> None:
    bad = ast.parse(
        "conn.execute(text(f\"SELECT * FROM facts WHERE agent_id = '{agent_id}'\"))\n"
        'q = "DELETE FROM facts WHERE id = %s" % fact_id\n'
        'q2 = "SELECT {} FROM facts".format(col)\n'
    )
    assert sorted(e for _, es in _templates(bad) for e in es) == sorted(
        ["agent_id", "<% or + formatting>", "<str.format>"]
    )
