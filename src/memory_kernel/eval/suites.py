"""The registry of evaluation suites: name → ``module:function``.

Each function is ``async def run(data: Path, embedder: Embedder) -> SuiteReport``; a suite
listed in ``SUITE_OPTIONS`` also takes those keyword options (``--budget``, ``--limit``,
``--contexts``, ``--extractor``; ``--judge`` for dedup, gate and ku; ``--config``, a
``MemoryKernelConfig`` read from a file, for admission, dedup, gate and ku).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Coroutine
from typing import Any, cast

from memory_kernel.errors import ConfigError
from memory_kernel.eval.report import SuiteReport

__all__ = ["JUDGED_CV", "SUITES", "SUITE_OPTIONS", "check_options", "load_suite"]

SuiteRunner = Callable[..., Coroutine[Any, Any, SuiteReport]]

SUITES: dict[str, str] = {
    "ku": "memory_kernel.eval.ku:run",
    "dedup": "memory_kernel.eval.dedup:run",
    "admission": "memory_kernel.eval.admission:run",
    "gate": "memory_kernel.eval.gate:run",
    "stsb": "memory_kernel.eval.stsb:run",
    "locomo": "memory_kernel.eval.locomo:run",
    "conversations": "memory_kernel.eval.conversations:run",
}

#: The command-line options a suite takes besides its data and embedder.
SUITE_OPTIONS: dict[str, frozenset[str]] = {
    "conversations": frozenset({"budget", "limit", "contexts", "extractor"}),
    "admission": frozenset({"config"}),
    "dedup": frozenset({"judge", "config"}),
    "gate": frozenset({"judge", "config"}),
    "ku": frozenset({"judge", "config"}),
}
#: The suites whose cross-validation runs each held-out fold through the kernel, so a
#: judge (``--judge``) can answer there too.
JUDGED_CV = frozenset({"dedup", "gate", "ku"})


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


def check_options(name: str, options: dict[str, object]) -> None:
    """Refuse options the suite does not take (before anything runs)."""
    unknown = sorted(set(options) - SUITE_OPTIONS.get(name, frozenset()))
    if unknown:
        flags = ", ".join(f"--{o}" for o in unknown)
        raise ConfigError(f"suite {name!r} takes no {flags}")
