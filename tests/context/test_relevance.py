"""The relevance pipeline, layer by layer, on small configs written for each case (and the
packaged default). Pure: no database."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from memory_kernel.context.relevance import RelevancePipeline, default_config_path
from memory_kernel.context.relevance_config import (
    DependencyCycleError,
    RelevanceConfig,
    RelevanceConfigError,
    load_relevance_config,
)
from memory_kernel.context.tokens import NodeTokenEstimates

NODES = ("a", "b", "c", "d", "e")


def pipeline(nodes: tuple[str, ...] = NODES, **config: Any) -> RelevancePipeline:
    cfg = load_relevance_config({"node_priority": list(nodes), **config})
    return RelevancePipeline(cfg, nodes=nodes, exact_nodes=True)


def included(p: RelevancePipeline, **call: Any) -> set[str]:
    call.setdefault("mode", "M")
    return {n for n, on in p.compute_inclusion_map(**call).items() if on}


# -- layer 1: template masks ------------------------------------------------------------------


def test_template_mask_hard_excludes_what_the_mode_does_not_use() -> None:
    p = pipeline(template_masks={"M": {"a": True, "b": False}, "N": {"a": False}})
    assert included(p, mode="M") == {"a", "c", "d", "e"}
    assert included(p, mode="N") == {"b", "c", "d", "e"}
    report = p.compute(mode="M").report
    assert report.excluded_hard == ("b",)
    assert report.total_included == 4


def test_mode_lookup_ignores_case() -> None:
    p = pipeline(template_masks={"ACKNOWLEDGE": {"a": False}})
    assert "a" not in included(p, mode="acknowledge")


def test_unknown_mode_includes_everything() -> None:
    p = pipeline(template_masks={"M": {"a": False}})
    assert included(p, mode="NEVER_HEARD_OF") == set(NODES)


def test_map_lists_every_node_with_a_bool() -> None:
    p = pipeline(template_masks={"M": {"a": False}})
    result = p.compute_inclusion_map(mode="M", signals={}, classification={})
    assert set(result) == set(NODES)
    assert all(isinstance(v, bool) for v in result.values())


# -- layer 2: signal rules --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("when", "signals", "fires"),
    [
        ({"greeting_pattern": True}, {"greeting_pattern": True}, True),
        ({"greeting_pattern": True}, {"greeting_pattern": False}, False),
        ({"warmth_gte": 0.5}, {"warmth": 0.5}, True),
        ({"warmth_gte": 0.5}, {"warmth": 0.49}, False),
        ({"warmth_gt": 0.5}, {"warmth": 0.5}, False),
        ({"warmth_gt": 0.5}, {"warmth": 0.51}, True),
        ({"tokens_lte": 6}, {"tokens": 6}, True),
        ({"tokens_lt": 6}, {"tokens": 6}, False),
        ({"tokens_lt": 6}, {"tokens": 5}, True),
        ({"turns_eq": 2}, {"turns": 2}, True),
        ({"turns_eq": 2}, {"turns": 3}, False),
        ({"warmth_gte": 0.5, "turns_gte": 2}, {"warmth": 0.9, "turns": 1}, False),
        ({"warmth_gte": 0.5, "turns_gte": 2}, {"warmth": 0.9, "turns": 2}, True),
        ({"warmth_gte": 0.5}, {}, False),  # missing signal: the rule does not fire
        ({"warmth_gte": 0.5}, {"warmth": "high"}, False),  # not comparable: does not fire
        ({"warmth_gte": 0.5}, {"warmth": None}, False),
        ({}, {}, True),  # an empty `when` always holds
    ],
)
def test_signal_rule_predicates(when: dict[str, Any], signals: dict[str, Any], fires: bool) -> None:
    p = pipeline(signal_rules={"a": [{"when": when, "strength": "hard"}]})
    assert ("a" not in included(p, signals=signals)) is fires


def test_returning_from_silence_comes_from_the_argument() -> None:
    p = pipeline(
        signal_rules={"a": [{"when": {"returning_from_silence": True}, "strength": "hard"}]}
    )
    assert "a" not in included(p, returning_from_silence=True)
    assert "a" in included(p, returning_from_silence=False)
    # A signal of the same name does not count: the argument is the source of truth.
    assert "a" in included(p, signals={"returning_from_silence": True})


def test_predicates_fall_back_to_the_classification() -> None:
    p = pipeline(signal_rules={"a": [{"when": {"topic": "weather"}, "strength": "hard"}]})
    assert "a" not in included(p, classification={"topic": "weather"})
    assert "a" in included(p, signals={"topic": "code"}, classification={"topic": "weather"})


def test_hard_wins_over_soft_when_both_fire() -> None:
    p = pipeline(
        signal_rules={
            "a": [{"when": {"x": 1}, "strength": "soft"}, {"when": {"y": 1}, "strength": "hard"}]
        },
        soft_recovery_budget=10_000,
    )
    report = p.compute(mode="M", signals={"x": 1, "y": 1}).report
    assert report.excluded_hard == ("a",)
    assert report.excluded_soft == ()
    assert report.recovered_soft == ()


def test_rules_do_not_touch_a_node_the_mask_already_excluded() -> None:
    p = pipeline(
        template_masks={"M": {"a": False}},
        signal_rules={"a": [{"when": {}, "strength": "soft"}]},
        soft_recovery_budget=10_000,
    )
    report = p.compute(mode="M").report
    assert report.excluded_hard == ("a",)
    assert "a" not in report.included, "a template-excluded node is never recovered"


# -- layer 3: urgency -------------------------------------------------------------------------


def test_urgency_force_includes_even_hard_excluded_nodes() -> None:
    p = pipeline(
        template_masks={"M": {"a": False, "b": False, "c": False}},
        urgency_overrides=["a", "b"],
    )
    report = p.compute(mode="M", classification={"urgency": "high"}).report
    assert {"a", "b"} <= set(report.included)
    assert "c" not in report.included
    assert report.overrides_applied == ("urgency",)
    assert "a" not in included(p, classification={"urgency": "low"})
    assert "a" not in included(p)


# -- layer 4: soft recovery -------------------------------------------------------------------


def soft_all(**extra: Any) -> RelevancePipeline:
    rules = {n: [{"when": {"quiet": True}, "strength": "soft"}] for n in ("b", "c", "d")}
    return pipeline(signal_rules=rules, **extra)


def test_soft_excluded_nodes_are_recovered_in_priority_order_node_by_node() -> None:
    p = soft_all(soft_recovery_priority=["d", "b", "c"], soft_recovery_budget=250)
    for node, tokens in {"a": 100, "b": 100, "c": 100, "d": 100, "e": 100}.items():
        p.estimates.observe(node, tokens)
    report = p.compute(mode="M", signals={"quiet": True}, token_budget_remaining=10_000).report
    assert report.recovered_soft == ("d", "b"), "250 tokens pay for two 100-token nodes"
    assert report.excluded_soft == ("c",)


def test_recovery_skips_a_node_too_big_and_takes_a_smaller_later_one() -> None:
    p = soft_all(soft_recovery_priority=["b", "c", "d"], soft_recovery_budget=300)
    for node, tokens in {"a": 10, "b": 500, "c": 100, "d": 100, "e": 10}.items():
        p.estimates.observe(node, tokens)
    report = p.compute(mode="M", signals={"quiet": True}).report
    assert report.recovered_soft == ("c", "d")
    assert report.excluded_soft == ("b",)


def test_recovery_respects_the_turn_headroom() -> None:
    p = soft_all(soft_recovery_priority=["b", "c", "d"], soft_recovery_budget=10_000)
    for node in NODES:
        p.estimates.observe(node, 100)
    # a and e are included (200 tokens); 450 remaining leaves room for two more nodes.
    report = p.compute(mode="M", signals={"quiet": True}, token_budget_remaining=450).report
    assert report.recovered_soft == ("b", "c")
    none = p.compute(mode="M", signals={"quiet": True}, token_budget_remaining=150).report
    assert none.recovered_soft == ()


def test_recovery_uses_measured_estimates_not_constants() -> None:
    p = soft_all(soft_recovery_priority=["b"], soft_recovery_budget=300)
    assert p.compute(mode="M", signals={"quiet": True}).report.recovered_soft[0] == "b"
    p.estimates.observe("b", 1000)  # the provider returned a lot last time
    assert "b" not in p.compute(mode="M", signals={"quiet": True}).report.recovered_soft


def test_recovery_counts_the_dependencies_a_node_pulls_in() -> None:
    p = soft_all(soft_recovery_priority=["b"], soft_recovery_budget=150, dependencies={"b": ["c"]})
    for node in NODES:
        p.estimates.observe(node, 100)
    # b alone costs 100, but with its (soft-excluded) dependency c it costs 200 > 150.
    report = p.compute(mode="M", signals={"quiet": True}).report
    assert "b" not in report.recovered_soft


def test_unmeasured_nodes_use_the_mean_of_measured_ones_then_the_prior() -> None:
    estimates = NodeTokenEstimates(prior=123)
    assert estimates.get("x") == 123
    estimates.observe("a", 100)
    estimates.observe("b", 300)
    assert estimates.get("x") == 200
    estimates.observe("a", 200)  # moving average, not the last value
    assert 100 < estimates.get("a") < 200


# -- layer 5: dependencies --------------------------------------------------------------------


def test_an_included_node_pulls_in_its_dependencies_transitively() -> None:
    p = pipeline(
        template_masks={"M": {"b": False, "c": False, "d": False}},
        dependencies={"a": ["b"], "b": ["c"]},
    )
    report = p.compute(mode="M").report
    assert set(report.included) == {"a", "b", "c", "e"}
    assert report.deps_added == ("b", "c")


def test_an_excluded_node_does_not_pull_its_dependencies() -> None:
    p = pipeline(template_masks={"M": {"a": False, "b": False}}, dependencies={"a": ["b"]})
    assert included(p) == {"c", "d", "e"}


def test_dependency_cycle_raises_a_typed_error_at_load() -> None:
    with pytest.raises(DependencyCycleError) as caught:
        load_relevance_config({"dependencies": {"a": ["b"], "b": ["c"], "c": ["a"]}})
    assert caught.value.cycle[0] == caught.value.cycle[-1]
    assert set(caught.value.cycle) == {"a", "b", "c"}
    assert isinstance(caught.value, RelevanceConfigError)
    with pytest.raises(DependencyCycleError):
        load_relevance_config({"dependencies": {"a": ["a"]}})


# -- layer 6: safety --------------------------------------------------------------------------


def test_safety_override_forces_identity_when_returning_from_silence() -> None:
    p = pipeline(
        template_masks={"M": {"a": False, "b": False}},
        safety_overrides={
            "a": [{"when": {"returning_from_silence": True}}, {"when": {"warmth_lt": 0.3}}]
        },
        dependencies={"a": ["b"]},
    )
    assert "a" not in included(p)
    report = p.compute(mode="M", returning_from_silence=True).report
    assert {"a", "b"} <= set(report.included), "a forced node brings its dependencies"
    assert report.overrides_applied == ("safety:a",)
    assert "a" in included(p, signals={"warmth": 0.1})
    assert "a" not in included(p, signals={"warmth": 0.5})


# -- layer 7: the cap -------------------------------------------------------------------------


def test_cap_is_enforced_lowest_priority_first() -> None:
    p = pipeline(max_included_nodes=3)
    report = p.compute(mode="M").report
    assert report.included == ("a", "b", "c")
    assert report.dropped_by_cap == ("e", "d")
    assert report.total_included == 3


def test_cap_drops_recovered_soft_nodes_before_the_modes_own() -> None:
    p = soft_all(max_included_nodes=3, soft_recovery_priority=["b"], soft_recovery_budget=10_000)
    report = p.compute(mode="M", signals={"quiet": True}).report
    # a, e are the mode's own; b, c, d were recovered and are the first to go.
    assert set(report.included) == {"a", "e", "b"}
    assert set(report.dropped_by_cap) == {"c", "d"}


def test_cap_never_drops_safety_forced_nodes_or_dependencies_of_kept_nodes() -> None:
    p = pipeline(
        max_included_nodes=2,
        safety_overrides={"e": [{"when": {}}]},
        dependencies={"a": ["d"]},
    )
    report = p.compute(mode="M").report
    assert "e" in report.included, "safety-forced nodes are never dropped"
    assert report.total_included == 2
    # a needs d: keeping a would take three slots, so a goes (then d is free to go too).
    assert "a" not in report.included or "d" in report.included


def test_cap_gives_up_with_a_warning_when_forced_nodes_exceed_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    p = pipeline(max_included_nodes=1, safety_overrides={n: [{"when": {}}] for n in ("a", "b")})
    with caplog.at_level(logging.WARNING):
        report = p.compute(mode="M").report
    assert set(report.included) == {"a", "b"}
    assert "exceed the cap" in caplog.text


def test_cap_key_aliases_of_the_original_service() -> None:
    assert load_relevance_config({"MAX_INCLUDED_NODES": 7}).max_included_nodes == 7
    assert load_relevance_config({"max_nodes": 5}).max_included_nodes == 5
    assert RelevanceConfig().max_included_nodes == 12


# -- disabled, fallback, format ---------------------------------------------------------------


def test_disabled_config_includes_everything() -> None:
    p = pipeline(enabled=False, template_masks={"M": {"a": False}}, max_included_nodes=1)
    report = p.compute(mode="M").report
    assert set(report.included) == set(NODES)
    assert report.enabled is False


def test_config_that_fails_to_load_falls_back_to_include_all(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text("{not json", encoding="utf-8")
    cyclic = tmp_path / "cyclic.json"
    cyclic.write_text(json.dumps({"dependencies": {"a": ["b"], "b": ["a"]}}), encoding="utf-8")
    for path in (broken, cyclic, tmp_path / "missing.json"):
        with caplog.at_level(logging.WARNING):
            p = RelevancePipeline.load(path, nodes=NODES)
        assert p.compute(mode="ACKNOWLEDGE").report.enabled is False
        assert set(p.compute(mode="ACKNOWLEDGE").report.included) >= set(NODES)
        assert "including every node" in caplog.text
        with pytest.raises(RelevanceConfigError):
            RelevancePipeline.load(path, strict=True)


@pytest.mark.parametrize(
    "bad",
    [
        {"template_masks": {"M": {"a": "yes please"}}},
        {"signal_rules": {"a": [{"when": {"x_gte": "high"}}]}},
        {"signal_rules": {"a": [{"when": {}, "strength": "medium"}]}},
        {"soft_recovery_budget": -1},
        {"max_included_nodes": 0},
        ["not", "an", "object"],
    ],
)
def test_invalid_configs_raise_a_config_error(bad: Any) -> None:
    with pytest.raises(RelevanceConfigError):
        load_relevance_config(bad)


def test_the_original_services_documented_format_loads_unchanged(tmp_path: Path) -> None:
    # Every snippet of the original documentation, keys and values as written there, plus
    # the kind of comment keys such files carry.
    original = {
        "_comment": "context relevance pre-parser",
        "enabled": True,
        "template_masks": {
            "RESPOND": {"episodic_memory": True, "working_memory": True, "facts": True},
            "ACKNOWLEDGE": {"episodic_memory": False, "working_memory": False},
            "CUSTOM_MODE": {"episodic_memory": False, "facts": True},
        },
        "signal_rules": {
            "episodic_memory": [
                {
                    "when": {"context_warmth_gte": 0.5, "working_memory_turns_gte": 2},
                    "strength": "soft",
                },
                {
                    "when": {"greeting_pattern": True, "prompt_token_count_lt": 6},
                    "strength": "hard",
                },
            ],
            "focus": [{"when": {"greeting_pattern": True}, "strength": "soft"}],
        },
        "dependencies": {
            "episodic_memory": ["gists"],
            "available_tools": ["available_skills"],
            "onboarding_nudge": ["identity_context"],
            "warm_return_hint": ["identity_context"],
            "new_node": ["existing_node"],
        },
        "urgency_overrides": ["working_memory", "world_state", "facts"],
        "safety_overrides": {
            "identity_context": [
                {"when": {"returning_from_silence": True}},
                {"when": {"context_warmth_lt": 0.3}},
            ],
            "working_memory": [{"when": {"working_memory_turns_gte": 1}}],
        },
        "soft_recovery_budget": 1500,
        "soft_recovery_priority": [
            "episodic_memory",
            "working_memory",
            "world_state",
            "facts",
            "active_lists",
            "focus",
            "gists",
        ],
    }
    path = tmp_path / "context-relevance.json"
    path.write_text(json.dumps(original), encoding="utf-8")
    p = RelevancePipeline.load(path, strict=True)
    assert {"new_node", "existing_node"} <= set(p.nodes)
    greeting = p.compute(
        mode="RESPOND", signals={"greeting_pattern": True, "prompt_token_count": 2}
    ).report
    assert "episodic_memory" in greeting.excluded_hard
    focus = greeting.excluded_soft + greeting.recovered_soft + greeting.dropped_by_cap
    assert "focus" in focus, "soft-excluded, then recovered or dropped by the cap"
    warm = p.compute(
        mode="CLARIFY",
        signals={"context_warmth": 0.8, "working_memory_turns": 3},
        token_budget_remaining=0,
    ).report
    assert "episodic_memory" in warm.excluded_soft
    assert "safety:working_memory" in warm.overrides_applied
    assert "working_memory" in warm.included


def test_packaged_default_config_loads_and_silences_a_greeting() -> None:
    p = RelevancePipeline.load(default_config_path(), strict=True)
    report = p.compute(
        mode="ACKNOWLEDGE", signals={"greeting_pattern": True, "prompt_token_count": 1}
    ).report
    assert not {"facts", "episodic_memory", "decisions", "gists"} & set(report.included)
    for mode in ("RESPOND", "CLARIFY", "ACT"):
        assert "facts" in p.compute(mode=mode).report.included


def test_report_is_logged_as_one_structured_line(caplog: pytest.LogCaptureFixture) -> None:
    p = pipeline(template_masks={"M": {"b": False}})
    with caplog.at_level(logging.INFO, logger="memory_kernel.context.relevance"):
        p.compute(mode="M")
    records = [r for r in caplog.records if "[CONTEXT RELEVANCE]" in r.getMessage()]
    assert len(records) == 1
    line = records[0].getMessage()
    assert "mode=M" in line and "excluded_hard=[b]" in line and "total_included=4" in line
    fields = records[0].context_relevance  # type: ignore[attr-defined]
    assert fields["excluded_hard"] == ("b",)
    assert set(fields) >= {
        "mode",
        "excluded_hard",
        "excluded_soft",
        "recovered_soft",
        "deps_added",
        "overrides_applied",
        "total_included",
        "est_tokens",
    }


def test_est_tokens_sums_the_included_nodes_estimates() -> None:
    p = pipeline(template_masks={"M": {"a": False}})
    for node, tokens in zip(NODES, (10, 20, 30, 40, 50), strict=True):
        p.estimates.observe(node, tokens)
    assert p.compute(mode="M").report.est_tokens == 20 + 30 + 40 + 50
