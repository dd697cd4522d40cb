"""The registry of evaluation suites: name → ``module:function``.

Each function is ``async def run(data: Path, embedder: Embedder) -> SuiteReport``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, cast

from memory_kernel.errors import ConfigError
from memory_kernel.eval.report import SuiteReport
from memory_kernel.protocols import Embedder

__all__ = ["SUITES", "load_suite"]

SuiteRunner = Callable[[Path, Embedder], Coroutine[Any, Any, SuiteReport]]

SUITES: dict[str, str] = {
    "ku": "memory_kernel.eval.ku:run",
    "dedup": "memory_kernel.eval.dedup:run",
    "admission": "memory_kernel.eval.admission:run",
    "gate": "memory_kernel.eval.gate:run",
    "stsb": "memory_kernel.eval.stsb:run",
    "locomo": "memory_kernel.eval.locomo:run",
}


def load_suite(name: str) -> SuiteRunner:
    target = SUITES.get(name)
    if target is None:
        raise ConfigError(f"unknown suite {name!r}; choose from {', '.join(sorted(SUITES))}")
    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise ConfigError(f"suite {name!r} is not available yet") from exc
    return cast(SuiteRunner, getattr(module, attr))
