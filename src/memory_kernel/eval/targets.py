"""Reading a suite's targets (``">= 0.9"``, ``"0 (seed: < 0.05)"``, ``"<= 1 row"``) and
telling whether a metric meets its target.

A target is free text for people, so only its first comparison is read: an optional
operator (``>=``, ``<=``, ``>``, ``<``, ``=``) followed by a number; a bare number means
equality. Text after it (a unit, the seed's figure in brackets) is a comment. A target with
no number (``"see notes"``) cannot be checked: its verdict is ``None``.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Mapping

__all__ = ["parse_target", "verdict", "verdicts"]

_TARGET = re.compile(r"(>=|<=|==|=|>|<)?\s*(-?\d+(?:\.\d+)?)")
_OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
    "=": math.isclose,
    "==": math.isclose,
}


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
