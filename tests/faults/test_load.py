"""The short version of ``benchmarks/load.py``: a few seconds of concurrent agents doing
pre_turn/post_turn loops; every call must succeed (errors = 0) and write what it returned."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
from sqlalchemy import func, select

from memory_kernel import MemoryKernel
from memory_kernel.storage.tables import episodes
from tests.conftest import schema_config

pytestmark = pytest.mark.faults
LOAD = Path(__file__).resolve().parents[2] / "benchmarks" / "load.py"


def _load_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("benchmarks_load", LOAD)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


async def test_short_load_has_no_errors(pg_dsn: str, drop_schema: str) -> None:
    load = _load_module()
    config = schema_config(drop_schema)
    async with MemoryKernel.open(pg_dsn, config=config) as kernel:
        result = await load.run(kernel, agents=12, duration_s=3.0)
        async with kernel.database.connection() as conn:
            turns = await conn.scalar(select(func.sum(episodes.c.metadata["turns"].as_integer())))
    assert result.errors == []
    assert result.turns > 0 and len(result.pre) == len(result.post) == result.turns
    assert turns == result.turns, "every returned post_turn is counted in its episode"
    assert result.size_after >= result.size_before
