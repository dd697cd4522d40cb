"""What a relevance computation returns and the one structured log line it writes."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

from memory_kernel.models.context import InclusionReport

__all__ = ["InclusionResult", "log_report"]

_log = logging.getLogger("memory_kernel.context.relevance")


@dataclass(frozen=True, slots=True)
class InclusionResult:
    included: frozenset[str]
    report: InclusionReport

    def as_map(self, nodes: Iterable[str]) -> dict[str, bool]:
        return {node: node in self.included for node in nodes}


def log_report(report: InclusionReport) -> None:
    """The original service's ``[CONTEXT RELEVANCE]`` line, with the report as ``extra``."""
    if not _log.isEnabledFor(logging.INFO):
        return
    _log.info(
        "[CONTEXT RELEVANCE] mode=%s | excluded_hard=[%s] | excluded_soft=[%s] | "
        "recovered_soft=[%s] | deps_added=[%s] | overrides_applied=[%s] | dropped_by_cap=[%s] "
        "| total_included=%d | est_tokens=%d",
        report.mode,
        ", ".join(report.excluded_hard),
        ", ".join(report.excluded_soft),
        ", ".join(report.recovered_soft),
        ", ".join(report.deps_added),
        ", ".join(report.overrides_applied),
        ", ".join(report.dropped_by_cap),
        report.total_included,
        report.est_tokens,
        extra={"context_relevance": report.model_dump()},
    )
