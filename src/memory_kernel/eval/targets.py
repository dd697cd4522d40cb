"""Reading a suite's targets (``">= 0.9"``, ``"0 (seed: < 0.05)"``, ``"<= 1 row"``) and
telling whether a metric meets its target.

A target is free text for people, so only its first comparison is read: an optional
operator (``>=``, ``<=``, ``>``, ``<``, ``=``) followed by a number; a bare number means
equality. Text after it (a unit, the seed's figure in brackets) is a comment. A target with
no number (``"see notes"``) cannot be checked: its verdict is ``None``.

``TARGETS`` holds the quality targets of issue 21, per suite; :func:`targets_for` gives a
report the ones its data can measure (a file of update pairs has no look-alike pairs, so it
is not judged on wrongly superseded ones).
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Mapping

__all__ = ["TARGETS", "parse_target", "targets_for", "verdict", "verdicts"]

_TARGET = re.compile(r"(>=|<=|==|=|>|<)?\s*(-?\d+(?:\.\d+)?)")
_OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
    "=": math.isclose,
    "==": math.isclose,
}


# Issue 21: what every quality suite must reach on held-out data (cross-validated figures
# are the honest estimate; the development figure is what the rules were fitted to).
TARGETS: dict[str, dict[str, str]] = {
    "gate": {
        "noise_rate": "< 0.05",  # share of what is recorded (frame as given) that is noise
        "content_missed_rate": "< 0.10",  # decisions missed when every row is deliberated
    },
    "admission": {"f1": ">= 0.9"},
    "dedup": {"accuracy": ">= 0.85", "negatives_merged": "0"},
    "ku": {
        "newest_value_at_1_rate": ">= 0.9",
        "stale_still_active": "0",
        # Read time (issue 21 allows resolving there): no stale value recalled unmarked.
        "stale_presented_as_current": "0",
        "wrongly_superseded_rate": "<= 0.02",  # look-alike pairs: the older fact retired
    },
}


def targets_for(suite: str, metrics: Mapping[str, float]) -> dict[str, str]:
    """The issue 21 targets of ``suite`` whose metric ``metrics`` has."""
    return {name: t for name, t in TARGETS.get(suite, {}).items() if name in metrics}


def parse_target(target: str) -> tuple[str, float] | None:
    """``(operator, number)`` of the first comparison in ``target``, or ``None``."""
    match = _TARGET.search(target)
    if match is None:
        return None
    return match.group(1) or "=", float(match.group(2))


def verdict(value: float, target: str) -> bool | None:
    """Whether ``value`` meets ``target``; ``None`` when the target has no comparison."""
    parsed = parse_target(target)
    if parsed is None:
        return None
    op, number = parsed
    return _OPS[op](float(value), number)


def verdicts(metrics: Mapping[str, float], targets: Mapping[str, str]) -> dict[str, bool | None]:
    """Met (True) / missed (False) / not checkable (None) for every target; a target whose
    metric is absent is missed."""
    return {
        name: (verdict(metrics[name], target) if name in metrics else False)
        for name, target in targets.items()
    }
