"""The relevance configuration: the original pre-parser's JSON format, loaded unchanged.

Keys (all optional): ``enabled``, ``template_masks`` (mode → node → bool), ``signal_rules``
(node → ``[{"when": {...}, "strength": "hard"|"soft"}]``), ``dependencies`` (node → nodes it
pulls in), ``urgency_overrides`` (nodes), ``safety_overrides`` (node → ``[{"when": {...}}]``),
``soft_recovery_budget`` (tokens), ``soft_recovery_priority`` (nodes) and the node cap
``max_included_nodes`` (also accepted as ``MAX_INCLUDED_NODES`` or ``max_nodes``). Two
memory-kernel additions, both optional: ``node_priority`` (the order the cap keeps nodes in)
and ``default_node_tokens`` (the token estimate of a node no provider has returned yet).

Unknown keys (comments, versions) are ignored so a file written for the original service
loads as is; known keys are validated and a broken file raises :class:`RelevanceConfigError`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator
from pydantic import ValidationError as PydanticValidationError

from memory_kernel.errors import ConfigError

__all__ = [
    "COMPARISONS",
    "DEFAULT_NODE_PRIORITY",
    "DependencyCycleError",
    "RelevanceConfig",
    "RelevanceConfigError",
    "SafetyRule",
    "SignalRule",
    "Strength",
    "find_cycle",
    "load_relevance_config",
]

#: Predicate suffixes, longest first so ``_gte`` is never read as ``_gt`` + "e".
COMPARISONS = ("_gte", "_lte", "_gt", "_lt", "_eq")

#: The nodes of the original service plus ``decisions`` and ``turns``, most important first:
#: the order the node cap keeps them in unless the config's ``node_priority`` says otherwise.
DEFAULT_NODE_PRIORITY = (
    "identity_context",
    "working_memory",
    "facts",
    "episodic_memory",
    "decisions",
    "turns",
    "gists",
    "world_state",
    "focus",
    "active_lists",
    "user_traits",
    "communication_style",
    "client_context",
    "available_tools",
    "available_skills",
    "act_history",
    "warm_return_hint",
    "identity_modulation",
    "onboarding_nudge",
)


class RelevanceConfigError(ConfigError):
    """The relevance configuration cannot be used."""


class DependencyCycleError(RelevanceConfigError):
    """``dependencies`` has a cycle; ``cycle`` lists it, first node repeated at the end."""

    def __init__(self, cycle: list[str]) -> None:
        self.cycle = cycle
        super().__init__("dependency cycle in the relevance config: " + " -> ".join(cycle))


class Strength(StrEnum):
    HARD = "hard"  # never recovered
    SOFT = "soft"  # recoverable while the token budget has headroom


def _check_when(value: dict[str, Any]) -> dict[str, Any]:
    for key, threshold in value.items():
        if not key:
            raise ValueError("a `when` key is empty")
        comparison = any(key.endswith(s) and len(key) > len(s) for s in COMPARISONS[:4])
        if comparison and (isinstance(threshold, bool) or not isinstance(threshold, int | float)):
            raise ValueError(f"`when.{key}` compares, so it needs a number, got {threshold!r}")
    return value


class _Rule(BaseModel):
    # Rules of the original files may carry comments (``reason``, ``description``...).
    model_config = ConfigDict(frozen=True, extra="ignore")

    when: dict[str, Any] = Field(default_factory=dict)

    @field_validator("when")
    @classmethod
    def _when(cls, value: dict[str, Any]) -> dict[str, Any]:
        return _check_when(value)


class SignalRule(_Rule):
    """Exclude the node when every predicate of ``when`` holds (an empty ``when`` always
    holds). A rule without ``strength`` is soft: the less destructive reading."""

    strength: Strength = Strength.SOFT


class SafetyRule(_Rule):
    """Force-include the node when every predicate of ``when`` holds."""


class RelevanceConfig(BaseModel):
    """The validated relevance configuration (see the module docstring for the format)."""

    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)

    enabled: bool = True
    template_masks: dict[str, dict[str, bool]] = Field(default_factory=dict)
    signal_rules: dict[str, list[SignalRule]] = Field(default_factory=dict)
    dependencies: dict[str, list[str]] = Field(default_factory=dict)
    urgency_overrides: list[str] = Field(default_factory=list)
    safety_overrides: dict[str, list[SafetyRule]] = Field(default_factory=dict)
    # The most tokens soft recovery may spend; each recovered node must also fit in what the
    # turn's remaining budget leaves after the nodes already included (seed default 1500).
    soft_recovery_budget: int = Field(default=1500, ge=0)
    soft_recovery_priority: list[str] = Field(default_factory=list)
    # The seed's MAX_INCLUDED_NODES safeguard (12): a prompt with more sections loses focus.
    max_included_nodes: int = Field(
        default=12,
        ge=1,
        validation_alias=AliasChoices("max_included_nodes", "MAX_INCLUDED_NODES", "max_nodes"),
    )
    node_priority: list[str] = Field(default_factory=list)
    # Only until a provider has returned something: then measured tokens are used.
    default_node_tokens: int = Field(default=200, ge=0)

    def nodes(self) -> set[str]:
        """Every node the configuration mentions."""
        found: set[str] = set(self.urgency_overrides) | set(self.soft_recovery_priority)
        found |= set(self.node_priority)
        for mask in self.template_masks.values():
            found |= set(mask)
        for node, deps in self.dependencies.items():
            found |= {node, *deps}
        return found | set(self.signal_rules) | set(self.safety_overrides)


def find_cycle(dependencies: Mapping[str, list[str]]) -> list[str] | None:
    """A cycle of the dependency graph (first node repeated at the end), or ``None``."""
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for dep in dependencies.get(node, ()):
            if state.get(dep) == 1:
                return [*path[path.index(dep) :], dep]
            if dep not in state and (cycle := visit(dep)) is not None:
                return cycle
        path.pop()
        state[node] = 2
        return None

    for start in dependencies:
        if start not in state and (cycle := visit(start)) is not None:
            return cycle
    return None


def load_relevance_config(source: str | Path | Mapping[str, Any]) -> RelevanceConfig:
    """Read and validate a configuration (a JSON file path or a mapping).

    Raises :class:`RelevanceConfigError` when it cannot be read or validated and
    :class:`DependencyCycleError` when ``dependencies`` has a cycle.
    """
    data: Any
    if isinstance(source, Mapping):
        data = dict(source)
    elif not isinstance(source, str | Path):
        raise RelevanceConfigError(f"a relevance config is a path or a mapping, not {source!r}")
    else:
        try:
            data = json.loads(Path(source).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise RelevanceConfigError(f"cannot read relevance config {source}: {exc}") from exc
    if not isinstance(data, dict):
        raise RelevanceConfigError("the relevance config must be a JSON object")
    try:
        config = RelevanceConfig.model_validate(data)
    except PydanticValidationError as exc:
        raise RelevanceConfigError(f"invalid relevance config: {exc}") from exc
    cycle = find_cycle(config.dependencies)
    if cycle is not None:
        raise DependencyCycleError(cycle)
    return config
