"""Repo-root Alembic environment: runs the package's own env (the revisions live in
``src/memory_kernel/storage/migrations/versions`` and ship inside the wheel)."""

import runpy
from pathlib import Path

runpy.run_path(
    str(Path(__file__).resolve().parents[1] / "src/memory_kernel/storage/migrations/env.py")
)
