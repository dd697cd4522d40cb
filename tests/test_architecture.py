"""The shape the code keeps (docs/architecture.md): one database stack through public APIs,
pure policy modules, small modules, no private names of the libraries under us."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "memory_kernel"
SOURCES = sorted(p for p in PACKAGE.rglob("*.py") if "migrations" not in p.parts)
# Libraries whose behaviour the storage layer relies on: only their public API is used.
GUARDED = ("sqlalchemy", "asyncpg", "pgvector", "alembic")
# SQLAlchemy's Row keeps its documented public methods under a leading underscore, so they
# cannot clash with column names.
ROW_API = {"_mapping", "_asdict", "_fields", "_t", "_tuple"}
# Each Heart and Brain capability keeps its rules in a pure policy module.
POLICIES = (
    "memory_kernel.heart.facts.policy",
    "memory_kernel.heart.episodes.policy",
    "memory_kernel.heart.episodes.summary",
    "memory_kernel.heart.turns.policy",
    "memory_kernel.heart.extraction.policy",
    "memory_kernel.heart.extraction.rules",
    "memory_kernel.brain.policy",
    "memory_kernel.consolidation.policy",
    "memory_kernel.erasure.policy",
    "memory_kernel.context.relevance",
    "memory_kernel.context.budget",
)
MAX_LINES = 400


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _defined_here() -> set[str]:
    """Every private name this package defines: functions, classes, attributes it assigns."""
    names: set[str] = set()
    for path in SOURCES:
        for node in ast.walk(_tree(path)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names.add(node.target.id)
    return {n for n in names if n.startswith("_")}


OURS = _defined_here()


def _private_uses(path: Path) -> list[str]:
    """Private names imported from a guarded library, and private attributes that this
    package never defines: another library's (``conn.sync_connection._transaction``)."""
    found = []
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.ImportFrom) and node.module:
            root = node.module.split(".")[0]
            if root in GUARDED:
                parts = node.module.split(".") + [a.name for a in node.names]
                found += [f"from {node.module} import …{p}" for p in parts if p.startswith("_")]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in GUARDED and "._" in alias.name:
                    found.append(f"import {alias.name}")
        elif isinstance(node, ast.Attribute):
            name = node.attr
            private = name.startswith("_") and not name.startswith("__")
            if private and name not in ROW_API and name not in OURS:
                found.append(f"line {node.lineno}: .{name}")
    return found


def test_no_private_name_of_another_library_is_used() -> None:
    offenders = {str(p.relative_to(PACKAGE)): uses for p in SOURCES if (uses := _private_uses(p))}
    assert offenders == {}


def test_the_private_name_check_sees_what_it_must() -> None:
    """The check itself finds the kinds of use it exists for (it is not vacuous)."""
    sample = PACKAGE.parent / "_sample_private_use.py"
    sample.write_text(
        "from asyncpg.exceptions._base import InternalClientError\n"
        "async def f(conn):\n"
        "    return conn.sync_connection._transaction, conn.row._mapping, conn._on_connect\n",
        encoding="utf-8",
    )
    try:
        uses = _private_uses(sample)
    finally:
        sample.unlink()
    assert uses == ["from asyncpg.exceptions._base import …_base", "line 3: ._transaction"]


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_is_longer_than_400_lines(path: Path) -> None:
    assert len(path.read_text(encoding="utf-8").splitlines()) <= MAX_LINES


def test_one_database_stack() -> None:
    """No second path to the server beside SQLAlchemy: no module reaches for the asyncpg
    connection under a SQLAlchemy one, and no second pool exists."""
    reaching = {"driver_connection", "get_raw_connection", "dbapi_connection"}
    found = {}
    for path in SOURCES:
        if path.name == "engine.py":  # the pool's checkout check looks at the socket
            continue
        names = {n.attr for n in ast.walk(_tree(path)) if isinstance(n, ast.Attribute)}
        if names & reaching:
            found[str(path.relative_to(PACKAGE))] = sorted(names & reaching)
    assert found == {}
    assert not (PACKAGE / "storage" / "driver.py").exists()
    assert not (PACKAGE / "storage" / "shelf.py").exists()


@pytest.mark.parametrize("module", POLICIES)
def test_policy_modules_import_without_storage_or_a_driver(module: str) -> None:
    """Each policy module imports with the storage package, the runtime, SQLAlchemy, asyncpg
    and pgvector made unimportable: its rules do no I/O."""
    script = f"""
import sys, types
from pathlib import Path
root = Path({str(PACKAGE)!r})
# Packages without their __init__ (which wires services), but for the two that only
# re-export plain data (settings, models): the policy modules and what they import run.
for init in root.rglob("__init__.py"):
    name = ".".join(("memory_kernel", *init.parent.relative_to(root).parts))
    if name not in ("memory_kernel.config", "memory_kernel.models"):
        stub = types.ModuleType(name)
        stub.__path__ = [str(init.parent)]
        sys.modules[name] = stub
for blocked in ("memory_kernel.storage", "memory_kernel.runtime", "sqlalchemy", "asyncpg",
                "pgvector", "httpx"):
    sys.modules[blocked] = None
import importlib
importlib.import_module({module!r})
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]


def _imported(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


@pytest.mark.parametrize("layer", ["heart", "brain"], ids=str)
def test_memory_layers_do_not_import_the_context_engine(layer: str) -> None:
    """Heart and Brain store and curate memory; the context engine reads them. An import
    the other way makes a cycle (the rule extractor once imported context's dates)."""
    offenders = [
        f"{path.relative_to(PACKAGE)}: {module}"
        for path in SOURCES
        if path.relative_to(PACKAGE).parts[0] == layer
        for module in _imported(path)
        if module == "memory_kernel.context" or module.startswith("memory_kernel.context.")
    ]
    assert not offenders, offenders
