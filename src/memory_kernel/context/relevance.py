"""The relevance pipeline: which context nodes a turn needs, decided before any I/O.

Seven layers, in order (the original pre-parser's, see ``relevance_config``):

1. template masks per mode — a node the mode's template does not use is hard-excluded;
2. signal rules — ``when`` predicates exclude a node, hard or soft;
3. urgency overrides — ``classification["urgency"] == "high"`` force-includes nodes;
4. soft recovery — soft-excluded nodes come back one by one, in ``soft_recovery_priority``
   order, while their *measured* token estimates (with the dependencies they pull in) fit
   both ``soft_recovery_budget`` and the turn's remaining budget (the original recovered
   all of them at once);
5. dependencies — an included node pulls in its dependencies (transitively);
6. safety overrides — force-include under conditions (with their dependencies);
7. the node cap — enforced, not only logged: nodes are dropped lowest class first
   (recovered soft nodes, then dependency-only nodes, then the mode's own nodes, then
   urgency-forced ones), lowest ``node_priority`` first within a class; never a
   safety-forced node and never a node that a kept node depends on.

Predicates read ``signals`` first, then ``classification``; ``returning_from_silence`` is
the argument of the call. A missing or non-comparable value makes a predicate false. An
unknown mode has no mask (nothing is template-excluded): the safe reading.

Speed: nodes are bits of an ``int``; masks, dependency closures and predicates are compiled
at load, so a call is a handful of integer operations (``benchmarks/context.py``).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memory_kernel.context.relevance_config import (
    DEFAULT_NODE_PRIORITY,
    RelevanceConfig,
    RelevanceConfigError,
    Strength,
    load_relevance_config,
)
from memory_kernel.context.relevance_report import InclusionResult, log_report
from memory_kernel.context.relevance_rules import closure, compile_when, default_config_path, holds
from memory_kernel.context.tokens import NodeTokenEstimates
from memory_kernel.models.context import InclusionReport

# InclusionResult and default_config_path live in their own modules; importable from here.
__all__ = ["InclusionResult", "RelevancePipeline", "default_config_path"]

_log = logging.getLogger(__name__)

_NAMES_CACHE = 4096


@dataclass(slots=True)
class _State:
    """One call's working sets, as bit masks."""

    included: int
    hard: int
    soft: int = 0
    protected: int = 0  # urgency-forced
    forced: int = 0  # safety-forced (never dropped)
    recovered: int = 0
    base: int = 0  # included after layer 4, before dependencies
    recovery_order: list[str] | None = None


class RelevancePipeline:
    """A compiled relevance configuration. Build it from a :class:`RelevanceConfig`, with
    :meth:`load` (a path or mapping) or with :meth:`include_all`."""

    def __init__(
        self,
        config: RelevanceConfig,
        *,
        nodes: Iterable[str] = (),
        exact_nodes: bool = False,
        estimates: NodeTokenEstimates | None = None,
    ) -> None:
        self.config = config
        self.estimates = estimates or NodeTokenEstimates(config.default_node_tokens)
        rank = {n: i for i, n in enumerate([*config.node_priority, *DEFAULT_NODE_PRIORITY])}
        # ``exact_nodes``: only the given nodes exist (the engine passes its providers), so a
        # node nobody provides never counts against the cap.
        universe = set(nodes) if exact_nodes else set(DEFAULT_NODE_PRIORITY) | config.nodes()
        universe |= set(nodes)
        #: Every node, most important first (the order the cap keeps them in).
        self.nodes: tuple[str, ...] = tuple(sorted(universe, key=lambda n: (rank.get(n, 1e9), n)))
        self._bit = {n: 1 << i for i, n in enumerate(self.nodes)}
        self._name = {b: n for n, b in self._bit.items()}
        self._all = (1 << len(self.nodes)) - 1
        self._masks = {
            mode.upper(): self._bits(n for n, used in mask.items() if not used)
            for mode, mask in config.template_masks.items()
        }
        self._rules = tuple(
            (
                self._bit[node],
                tuple((compile_when(r.when), r.strength is Strength.HARD) for r in rules),
            )
            for node, rules in config.signal_rules.items()
            if rules and node in universe
        )
        deps_of = closure(config.dependencies)
        self._deps = {self._bit[n]: self._bits(d) for n, d in deps_of.items() if n in universe}
        self._dep_items = tuple((b, d) for b, d in self._deps.items() if d)
        self._dependents = {
            self._bit[n]: self._bits(m for m, ds in deps_of.items() if n in ds) for n in self.nodes
        }
        self._safety = tuple(
            (
                self._bit[node] | self._deps.get(self._bit[node], 0),
                node,
                tuple(compile_when(r.when) for r in rules),
            )
            for node, rules in config.safety_overrides.items()
            if rules and node in universe
        )
        self._urgent = self._bits(config.urgency_overrides)
        prio = [n for n in dict.fromkeys(config.soft_recovery_priority) if n in universe]
        self._recovery = tuple(
            self._bit[n] for n in prio + [n for n in self.nodes if n not in prio]
        )
        self._lowest_first = tuple((n, self._bit[n]) for n in reversed(self.nodes))
        self._names: dict[int, tuple[str, ...]] = {}
        self._est_version = -1
        self._est: dict[int, int] = {}

    def _bits(self, nodes: Iterable[str]) -> int:
        out = 0
        for node in nodes:
            out |= self._bit.get(node, 0)
        return out

    def _tuple(self, bits: int) -> tuple[str, ...]:
        """The node names of ``bits``, most important first (memoised: few distinct sets)."""
        names = self._names.get(bits)
        if names is None:
            if len(self._names) >= _NAMES_CACHE:
                self._names.clear()
            names = self._names[bits] = tuple(n for n in self.nodes if bits & self._bit[n])
        return names

    def _cost(self, bits: int) -> int:
        if self._est_version != self.estimates.version:
            self._est = {b: self.estimates.get(n) for n, b in self._bit.items()}
            self._est_version = self.estimates.version
        return sum(cost for b, cost in self._est.items() if bits & b)

    # -- construction ---------------------------------------------------------------------

    @classmethod
    def include_all(cls, *, nodes: Iterable[str] = ()) -> RelevancePipeline:
        """A pipeline that includes every node (the ``enabled: false`` behaviour)."""
        return cls(RelevanceConfig(enabled=False), nodes=nodes)

    @classmethod
    def load(
        cls,
        source: str | Path | Mapping[str, Any] | None = None,
        *,
        nodes: Iterable[str] = (),
        strict: bool = False,
    ) -> RelevancePipeline:
        """Load a configuration (``None``: the packaged default).

        A configuration that fails to load raises when ``strict``; otherwise it is logged as
        a warning and the pipeline includes everything — the original service's fallback.
        """
        try:
            config = load_relevance_config(default_config_path() if source is None else source)
        except RelevanceConfigError as exc:
            if strict:
                raise
            _log.warning("relevance config not loaded, including every node: %s", exc)
            return cls.include_all(nodes=nodes)
        return cls(config, nodes=nodes)

    def over(self, nodes: Iterable[str]) -> RelevancePipeline:
        """The same configuration over exactly ``nodes`` (the engine's providers), sharing
        the token estimates."""
        return RelevancePipeline(
            self.config, nodes=nodes, exact_nodes=True, estimates=self.estimates
        )

    # -- the call -------------------------------------------------------------------------

    def compute_inclusion_map(
        self,
        *,
        mode: str,
        signals: Mapping[str, Any] | None = None,
        classification: Mapping[str, Any] | None = None,
        returning_from_silence: bool = False,
        token_budget_remaining: int | None = None,
    ) -> dict[str, bool]:
        """The original call shape: ``{node: included}`` for every known node."""
        result = self.compute(
            mode=mode,
            signals=signals,
            classification=classification,
            returning_from_silence=returning_from_silence,
            token_budget_remaining=token_budget_remaining,
        )
        return result.as_map(self.nodes)

    def compute(
        self,
        *,
        mode: str,
        signals: Mapping[str, Any] | None = None,
        classification: Mapping[str, Any] | None = None,
        returning_from_silence: bool = False,
        token_budget_remaining: int | None = None,
        log: bool = True,
    ) -> InclusionResult:
        """Run the seven layers (``token_budget_remaining=None``: only
        ``soft_recovery_budget`` bounds recovery). The report is logged as one line."""
        overrides: list[str] = []
        if not self.config.enabled:
            state = _State(included=self._all, hard=0)
        else:
            state = self._run(
                mode.upper(),
                signals or {},
                classification or {},
                returning_from_silence,
                token_budget_remaining,
                overrides,
            )
        dropped = self._cap(state) if self.config.enabled else []
        result = self._result(mode, state, overrides, dropped)
        if log:
            log_report(result.report)
        return result

    def _run(
        self,
        mode: str,
        signals: Mapping[str, Any],
        classification: Mapping[str, Any],
        rfs: bool,
        budget: int | None,
        overrides: list[str],
    ) -> _State:
        hard = self._masks.get(mode, 0)  # layer 1
        state = _State(included=self._all & ~hard, hard=hard)
        for bit, rules in self._rules:  # layer 2
            if not state.included & bit:
                continue
            strength = None
            for conditions, is_hard in rules:
                if holds(conditions, signals, classification, rfs):
                    strength = is_hard
                    if is_hard:
                        break
            if strength is not None:
                state.included &= ~bit
                if strength:
                    state.hard |= bit
                else:
                    state.soft |= bit
        if self._urgent and classification.get("urgency") == "high":  # layer 3
            overrides.append("urgency")
            state.protected = self._urgent
            state.included |= self._urgent
            state.soft &= ~self._urgent
        if state.soft:  # layer 4
            self._recover(state, budget)
        state.base = state.included
        for bit, deps in self._dep_items:  # layer 5
            if state.included & bit:
                state.included |= deps
        for bits, node, whens in self._safety:  # layer 6
            if any(holds(c, signals, classification, rfs) for c in whens):
                overrides.append(f"safety:{node}")
                state.forced |= bits
                state.included |= bits
        return state

    def _recover(self, state: _State, budget: int | None) -> None:
        """Re-include soft-excluded nodes one by one while their estimates fit."""
        headroom = math.inf if budget is None else budget - self._cost(state.included)
        allowance = self.config.soft_recovery_budget
        for bit in self._recovery:
            if not state.soft & bit:
                continue
            pulled = (bit | self._deps.get(bit, 0)) & ~state.included
            cost = self._cost(pulled)
            if cost <= allowance and cost <= headroom:
                allowance -= cost
                headroom -= cost
                state.included |= pulled
                state.soft &= ~bit
                state.recovered |= bit
                state.recovery_order = [*(state.recovery_order or ()), self._name[bit]]

    def _cap(self, state: _State) -> list[str]:
        cap = self.config.max_included_nodes
        dropped: list[str] = []
        while state.included.bit_count() > cap:
            victim = self._victim(state)
            if victim is None:
                _log.warning(
                    "relevance: %d forced nodes exceed the cap of %d",
                    state.included.bit_count(),
                    cap,
                )
                break
            state.included &= ~self._bit[victim]
            dropped.append(victim)
        return dropped

    def _victim(self, state: _State) -> str | None:
        """The node the cap drops next, or ``None`` when only untouchable nodes are left."""
        droppable = state.included & ~state.forced
        plain = droppable & ~state.protected & ~state.recovered
        classes = (
            droppable & state.recovered & ~state.protected,  # recovered soft nodes
            plain & ~state.base,  # only there as a dependency
            plain & state.base,  # the mode's own nodes
            droppable & state.protected,  # urgency-forced
        )
        for klass in classes:
            if not klass:
                continue
            for node, bit in self._lowest_first:
                if klass & bit and not self._dependents[bit] & state.included:
                    return node
        return None

    def _result(
        self, mode: str, state: _State, overrides: list[str], dropped: list[str]
    ) -> InclusionResult:
        included = state.included
        report = InclusionReport.model_construct(
            mode=mode,
            included=self._tuple(included),
            excluded_hard=self._tuple(state.hard & ~included),
            excluded_soft=self._tuple(state.soft & ~included),
            recovered_soft=tuple(n for n in state.recovery_order or () if self._bit[n] & included),
            deps_added=self._tuple(included & ~state.base & ~state.forced),
            overrides_applied=tuple(overrides),
            dropped_by_cap=tuple(dropped),
            total_included=included.bit_count(),
            est_tokens=self._cost(included),
            enabled=self.config.enabled,
        )
        return InclusionResult(frozenset(report.included), report)
