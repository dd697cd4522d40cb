"""Fuzzing profiles and the fuzz kernel.

Profiles: ``ci`` (default, a short run inside ``pytest -q``) and ``full`` (10,000+ cases
across the entry points), chosen by ``MK_FUZZ_PROFILE`` or, when unset, by running the
``slow`` marker: ``pytest -m slow tests/fuzz``. The number of generated cases is printed at
the end of the run (docs/reliability.md records it)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator

import pytest
from hypothesis import HealthCheck, settings

from memory_kernel import MemoryKernel
from tests.conftest import scratch_kernel
from tests.fuzz.checks import CASES

_COMMON = {
    "deadline": None,
    "database": None,  # no example database written into the repository
    "suppress_health_check": [
        HealthCheck.function_scoped_fixture,  # one kernel serves every example of a test
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
    ],
}
settings.register_profile("ci", max_examples=15, **_COMMON)  # type: ignore[arg-type]
settings.register_profile("full", max_examples=500, **_COMMON)  # type: ignore[arg-type]


def _profile(config: pytest.Config) -> str:
    chosen = os.environ.get("MK_FUZZ_PROFILE")
    if chosen is None:
        markexpr = str(config.getoption("markexpr", default="") or "")
        chosen = "full" if "slow" in markexpr and "not slow" not in markexpr else "ci"
    return chosen


def pytest_configure(config: pytest.Config) -> None:
    settings.load_profile(_profile(config))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # The full run is the fuzz tests under the full profile: mark them slow so that
    # `pytest -m slow` (the long variants' command) selects them, before marks are applied.
    if _profile(config) == "full":
        for item in items:
            if "tests/fuzz/" in item.nodeid:
                item.add_marker(pytest.mark.slow)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if CASES:
        total = sum(CASES.values())
        per = ", ".join(f"{k}={v}" for k, v in sorted(CASES.items()))
        terminalreporter.write_line(f"fuzz: {total} generated cases ({per})")


@pytest.fixture(scope="module")
async def fuzz_kernel(pg_dsn: str) -> AsyncIterator[MemoryKernel]:
    """One store for the module (opening one per test costs a migration). No background
    worker: between a call's before/after snapshots nothing else writes."""
    async with scratch_kernel(pg_dsn, "fuzz") as kernel:
        yield kernel
