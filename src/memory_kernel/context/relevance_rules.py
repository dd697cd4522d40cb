"""Compiled pieces of a relevance configuration: ``when`` predicates and dependency closures.

Kept apart from the pipeline so the hot path (``relevance.RelevancePipeline.compute``) reads
only pre-compiled tuples: a predicate is ``(key, operator, expected)``, compiled once at load.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

__all__ = ["Conditions", "Predicate", "closure", "compile_when", "default_config_path", "holds"]

_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "_gte": operator.ge,
    "_lte": operator.le,
    "_gt": operator.gt,
    "_lt": operator.lt,
    "_eq": operator.eq,
}
_MISSING = object()
_SILENCE = "returning_from_silence"

Predicate = tuple[str, Callable[[Any, Any], bool], Any]
Conditions = tuple[Predicate, ...]


def default_config_path() -> Path:
    """The configuration shipped with the package (``default_relevance.json``)."""
    return Path(str(resources.files("memory_kernel.context") / "default_relevance.json"))


def compile_when(when: Mapping[str, Any]) -> Conditions:
    """``{"x_gte": 3, "y": true}`` → predicates; a key without a known suffix is equality."""
    out: list[Predicate] = []
    for key, value in when.items():
        for suffix, op in _OPS.items():
            if key.endswith(suffix) and len(key) > len(suffix):
                out.append((key[: -len(suffix)], op, value))
                break
        else:
            out.append((key, operator.eq, value))
    return tuple(out)


def holds(
    conditions: Conditions, signals: Mapping[str, Any], classification: Mapping[str, Any], rfs: bool
) -> bool:
    """All predicates hold. ``signals`` are read first, then ``classification``;
    ``returning_from_silence`` is ``rfs``. A missing or non-comparable value is false."""
    for key, op, expected in conditions:
        if key == _SILENCE:
            value: Any = rfs
        else:
            value = signals.get(key, _MISSING)
            if value is _MISSING:
                value = classification.get(key, _MISSING)
                if value is _MISSING:
                    return False
        try:
            if not op(value, expected):
                return False
        except TypeError:
            return False
    return True


def closure(dependencies: Mapping[str, list[str]]) -> dict[str, tuple[str, ...]]:
    """Each node's transitive dependencies (the graph is acyclic: checked at load)."""
    memo: dict[str, tuple[str, ...]] = {}

    def deps(node: str) -> tuple[str, ...]:
        if node not in memo:
            out: dict[str, None] = {}
            for dep in dependencies.get(node, ()):
                out[dep] = None
                out.update(dict.fromkeys(deps(dep)))
            memo[node] = tuple(out)
        return memo[node]

    return {node: deps(node) for node in dependencies}
