"""Cross-validation without a database: the fold split, the readers of the authored formats,
the look-alike (distinct pairs) metric, fitting a threshold per fold, and the report."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from memory_kernel.config import MemoryKernelConfig
from memory_kernel.errors import ConfigError
from memory_kernel.eval import admission, dedup, gate, ku
from memory_kernel.eval._metrics import Metrics
from memory_kernel.eval.cv import CvSetup, cross_validate, summarise
from memory_kernel.eval.fittable import (
    FixedClassifier,
    NoParams,
    SuiteRules,
    Threshold,
    ThresholdClassifier,
)
from memory_kernel.eval.folds import stratified_folds
from memory_kernel.eval.report import CrossValidation, FoldStats, SuiteReport, print_report
from memory_kernel.eval.targets import TARGETS, targets_for


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


# --- folds ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("rows", "folds"), [(110, 5), (60, 5), (12, 3), (7, 7), (23, 4)])
def test_every_row_is_held_out_exactly_once(rows: int, folds: int) -> None:
    labels = ["a" if i % 3 else "b" for i in range(rows)]
    held = stratified_folds(labels, folds, seed=0)
    assert len(held) == folds
    assert sorted(i for fold in held for i in fold) == list(range(rows))
    sizes = [len(fold) for fold in held]
    assert max(sizes) - min(sizes) <= 1


def test_folds_keep_the_label_mix() -> None:
    labels = ["decision"] * 50 + ["noise"] * 60
    for fold in stratified_folds(labels, 5, seed=3):
        assert Counter(labels[i] for i in fold) == {"decision": 10, "noise": 12}
    uneven = ["x"] * 7 + ["y"] * 13
    counts = [Counter(uneven[i] for i in fold) for fold in stratified_folds(uneven, 3, seed=1)]
    for label in ("x", "y"):
        per_fold = [c[label] for c in counts]
        assert max(per_fold) - min(per_fold) <= 1


def test_folds_are_deterministic_by_seed() -> None:
    labels = ["admit"] * 60 + ["reject"] * 50
    assert stratified_folds(labels, 5, seed=7) == stratified_folds(labels, 5, seed=7)
    assert stratified_folds(labels, 5, seed=7) != stratified_folds(labels, 5, seed=8)


@pytest.mark.parametrize(("rows", "folds"), [(10, 1), (3, 4), (100, 51)])
def test_impossible_fold_counts_are_refused(rows: int, folds: int) -> None:
    with pytest.raises(ConfigError, match="--folds"):
        stratified_folds(["a"] * rows, folds, seed=0)


# --- readers of the authored formats -------------------------------------------------------


def test_gate_and_admission_read_rows_with_why(tmp_path: Path) -> None:
    gate_rows = gate.load_rows(_write(tmp_path / "g.jsonl", [
        {"id": "g001", "frame": "decision", "response_text": "Dropping the Twitter dataset.",
         "tool_names": [], "label": "decision", "why": "data source dropped with reason"},
        {"id": "g002", "frame": "task", "response_text": "Working on it now", "tool_names": [],
         "label": "noise", "why": "status update"},
    ]))  # fmt: skip
    assert [r["label"] for r in gate_rows] == ["decision", "noise"]
    rows = admission.load_rows(_write(tmp_path / "a.jsonl", [
        {"id": "a001", "content": "Helios is funded through Q2 2026.", "subject": "Helios",
         "category": "project", "label": "admit", "why": "specific funding horizon"},
        {"content": "Thanks!", "label": "reject"},
    ]))  # fmt: skip
    assert [r["id"] for r in rows] == ["a001", 1]  # a row without an id is named by position


def test_readers_refuse_duplicate_ids_and_unknown_labels(tmp_path: Path) -> None:
    twice = {"id": "g1", "frame": "task", "response_text": "ok", "label": "noise"}
    with pytest.raises(ConfigError, match="duplicate ids"):
        gate.load_rows(_write(tmp_path / "g.jsonl", [twice, twice]))
    with pytest.raises(ConfigError, match="label"):
        admission.load_rows(_write(tmp_path / "a.jsonl", [{"content": "x", "label": "maybe"}]))
    pair = {"id": "x", "topic": "t", "old_fact": "a", "new_fact": "b", "label": "sideways"}
    with pytest.raises(ConfigError, match="sideways"):
        ku.load_pairs(_write(tmp_path / "k.jsonl", [pair]))


def test_dedup_reads_kinds(dedup_kinds: Path, dedup_pairs: Path) -> None:
    fmt, pairs = dedup.load_pairs(dedup_kinds)
    assert fmt == "pairs"
    assert [(p.id, p.same, p.kind) for p in pairs[:3]] == [
        ("k1", True, "reorder"), ("k2", True, "reorder"), ("k3", False, "value_change"),
    ]  # fmt: skip
    _, plain = dedup.load_pairs(dedup_pairs)
    assert {p.kind for p in plain} == {""}


def test_ku_reads_update_distinct_and_mixed_files(ku_mixed: Path, ku_pairs: Path) -> None:
    pairs = ku.load_pairs(ku_mixed)
    assert [(p.id, p.label) for p in pairs] == [
        ("u1", "update"), ("u2", "update"), ("d1", "distinct"), ("d2", "distinct"),
    ]  # fmt: skip
    assert pairs[0].expected_current == "5" and pairs[2].expected_current is None
    old = ku.load_pairs(ku_pairs)  # the first format: qi, no label (= update)
    assert [(p.id, p.label) for p in old] == [("0", "update"), ("1", "update")]


# --- metrics ----------------------------------------------------------------------------------


def _check(*, top: bool = False, current: bool = True, admitted: bool = True,
           action: str = "added") -> ku.KuCheck:  # fmt: skip
    return ku.KuCheck(top, current, admitted, action, "active" if current else "superseded", "")


def _pair(n: int, label: str) -> ku.KuPair:
    return ku.KuPair(f"p{n}", "topic", "old", "new", None, label)


def test_distinct_pairs_count_wrongly_superseded_and_wrongly_merged() -> None:
    pairs = [_pair(n, "distinct") for n in range(5)]
    checks = [
        _check(current=True),  # both kept: right
        _check(current=False),  # the old fact retired by a look-alike: wrong
        _check(current=False, admitted=False),  # never admitted: not a supersession
        _check(current=True, action="reinforced"),  # merged into the old one as a duplicate
        _check(current=False),
    ]
    metrics = ku.score(pairs, checks)
    assert metrics["wrongly_superseded"] == 2
    assert metrics["wrongly_superseded_rate"] == 0.4
    assert metrics["wrongly_merged"] == 1 and metrics["wrongly_merged_rate"] == 0.2
    assert metrics["old_not_admitted"] == 1
    assert "newest_value_at_1" not in metrics  # no update pairs: not measured, not judged
    assert targets_for("ku", metrics) == {"wrongly_superseded_rate": "<= 0.02"}


def test_mixed_ku_scores_each_label_on_its_own_pairs() -> None:
    pairs = [_pair(0, "update"), _pair(1, "update"), _pair(2, "distinct")]
    checks = [_check(top=True, current=False), _check(top=False, current=True), _check()]
    metrics = ku.score(pairs, checks)
    assert metrics["update_pairs"] == 2 and metrics["distinct_pairs"] == 1
    assert metrics["newest_value_at_1"] == 1 and metrics["newest_value_at_1_rate"] == 0.5
    assert metrics["stale_still_active"] == 1
    assert metrics["wrongly_superseded"] == 0
    assert set(targets_for("ku", metrics)) == set(TARGETS["ku"])
    shared = ku.score(pairs, checks, prefix="shared_")
    assert set(shared) == {f"shared_{k}" for k in metrics if k.startswith(("newest", "stale",
                                                                           "wrongly"))} | {
        "shared_dated_by_other_pair"}  # fmt: skip


def test_the_shared_run_counts_facts_dated_by_another_pairs_fact() -> None:
    pairs = [_pair(0, "update"), _pair(1, "distinct"), _pair(2, "distinct")]
    checks = [
        _check()._replace(old_shown=True, old_dated_by_other=True),  # marked by a stranger
        _check()._replace(old_shown=True, old_dated=True),  # marked by its own newer fact
        _check(current=False)._replace(old_dated_by_other=True),  # retired: counted at write
    ]
    shared = ku.score(pairs, checks, prefix="shared_")
    assert shared["shared_dated_by_other_pair"] == 1
    assert "dated_by_other_pair" not in ku.score(pairs, checks)  # alone, no stranger exists


def test_the_shared_agent_is_scored_as_searched_and_as_recalled_by_the_context() -> None:
    pairs = [_pair(0, "update"), _pair(1, "distinct")]
    alone = _check()._replace(old_shown=True, old_dated=True)
    searched = _check()._replace(old_shown=True)  # shown, and nothing marks it
    recalled = _check()._replace(old_shown=True, old_dated_by_other=True)
    metrics = ku.score_with_shared(pairs, [(alone, searched, recalled)] * 2)
    assert metrics["stale_presented_as_current"] == 0
    assert metrics["shared_stale_presented_as_current"] == 1
    assert metrics["shared_dated_by_other_pair"] == 0
    assert metrics["shared_context_stale_presented_as_current"] == 1
    assert metrics["shared_context_dated_by_other_pair"] == 2


def test_dedup_scores_per_kind(dedup_kinds: Path) -> None:
    _, pairs = dedup.load_pairs(dedup_kinds)
    metrics = dedup.score(pairs, [True, False, True, False])
    assert metrics["negatives_merged"] == 1 and metrics["positives_apart"] == 1
    assert metrics["accuracy.reorder"] == 0.5
    assert metrics["accuracy.value_change"] == 0.0 and metrics["accuracy.negation"] == 1.0


def test_gate_scores_frame_as_given_and_content_only() -> None:
    rows = [{"id": n, "label": label} for n, label in
            enumerate(["decision", "decision", "noise", "noise"])]  # fmt: skip
    decisions = [gate.GateDecision(True, True), gate.GateDecision(False, True),
                 gate.GateDecision(False, True), gate.GateDecision(False, False)]  # fmt: skip
    metrics = gate.score(rows, decisions)
    assert metrics["noise_rate"] == 0.0 and metrics["missed_rate"] == 0.5
    assert metrics["content_noise_rate"] == round(1 / 3, 4)
    assert metrics["content_missed_rate"] == 0.0
    assert gate.objective(rows, decisions) == 0.8  # content only: P 2/3, R 1


def test_summarise_skips_folds_without_the_metric() -> None:
    summary = summarise([{"f1": 0.5, "n": 2}, {"f1": 1.0}, {"f1": 0.75, "n": 4}])
    assert summary["f1"] == FoldStats(mean=0.75, min=0.5, max=1.0, folds=[0.5, 1.0, 0.75])
    assert summary["n"].folds == [2, 4] and summary["n"].mean == 3.0


# --- fitting per fold, with a classifier that needs no kernel -------------------------------

Row = tuple[str, float, bool]  # key, score, gold


async def _decide_at(rows: Sequence[Row], config: MemoryKernelConfig) -> list[bool]:
    threshold = config.heart.fact_dedup_similarity
    return [score >= threshold for _, score, _ in rows]


def _score(rows: Sequence[Row], predicted: Sequence[bool]) -> Metrics:
    right = sum(p == gold for p, (_, _, gold) in zip(predicted, rows, strict=True))
    return {"rows": len(rows), "accuracy": round(right / len(rows), 4)}


def _accuracy(rows: Sequence[Row], predicted: Sequence[bool]) -> float:
    return float(_score(rows, predicted)["accuracy"])


RULES = SuiteRules(decide=_decide_at, score=_score, key=lambda row: row[0])


async def test_a_threshold_is_fitted_on_the_training_rows_only() -> None:
    # Positives score 0.6-0.8, negatives 0.2-0.4: any threshold in (0.4, 0.6] separates them.
    rows: list[Row] = [(f"r{n}", s, s > 0.5) for n, s in enumerate([0.2, 0.3, 0.4, 0.6, 0.7, 0.8])]
    model = ThresholdClassifier(
        RULES, param="heart.fact_dedup_similarity", grid=[0.1, 0.5, 0.9],
        objective=_accuracy, objective_name="accuracy",
    )  # fmt: skip
    await model.prepare(rows)
    fitted = await model.fit(rows)
    assert fitted == Threshold("heart.fact_dedup_similarity", 0.5, "accuracy", 1.0)
    # Trained on rows that say "everything is positive", it picks the lowest threshold.
    low = await model.fit([("r0", 0.2, True), ("r1", 0.3, True)])
    assert low.value == 0.1 and "grid edge" in model.describe(low)
    assert (await model.evaluate(rows, low))["accuracy"] == 0.5


async def test_cross_validate_holds_each_row_out_once_and_reports_every_fold() -> None:
    rows: list[Row] = [(f"r{n}", n / 10, n >= 5) for n in range(10)]
    seen: list[str] = []

    def score(chosen: Sequence[Row], predicted: Sequence[bool]) -> Metrics:
        if len(chosen) < len(rows):  # evaluate() of a held-out fold
            seen.extend(row[0] for row in chosen)
        return _score(chosen, predicted)

    rules = SuiteRules(decide=_decide_at, score=score, key=lambda row: row[0])
    model = FixedClassifier(rules)  # the default threshold 0.33: r4 is a false positive
    setup: CvSetup[Row, NoParams] = CvSetup(rows, [str(r[2]) for r in rows], model, "gold")
    summary, table = await cross_validate(setup, folds=5, seed=1, shown=["accuracy"])
    assert sorted(seen) == sorted(row[0] for row in rows)
    assert [t["held out"] for t in table] == [2] * 5 and all(t["fitted"] == "fixed" for t in table)
    assert len(summary["accuracy"].folds) == 5
    assert summary["accuracy"].min == 0.5 and summary["accuracy"].max == 1.0
    assert summary["accuracy"].mean == 0.9


# --- the report ------------------------------------------------------------------------------


def test_report_shows_dev_and_cv_side_by_side_with_both_verdicts() -> None:
    cv = CrossValidation(
        folds=5, seed=0, stratified_by="label", fitted="nothing",
        metrics={"f1": FoldStats(mean=0.8, min=0.7, max=0.9, folds=[0.7, 0.8, 0.9, 0.8, 0.8])},
    )  # fmt: skip
    report = SuiteReport(
        suite="admission", data="d", embedder="e", metrics={"f1": 0.95, "rows": 110},
        targets={"f1": ">= 0.9"}, cv=cv,
    )  # fmt: skip
    dumped = report.model_dump(mode="json")
    assert dumped["verdicts"] == {"f1": True} and dumped["cv_verdicts"] == {"f1": False}
    assert dumped["cv"]["metrics"]["f1"]["folds"] == [0.7, 0.8, 0.9, 0.8, 0.8]
    console = Console(record=True, width=160)
    print_report(report, console)
    text = console.export_text()
    assert "CV mean" in text and "0.7-0.9" in text
    assert "dev 1/1 targets met · 5-fold CV 0/1 targets met" in text
    assert SuiteReport(suite="x", data="d", embedder="e").model_dump()["cv_verdicts"] == {}
