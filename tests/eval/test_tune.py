"""``memory-kernel tune``: threshold sweeps are tables with sane shapes (recall cannot rise
as a similarity threshold rises), a best value, JSON and a plot."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memory_kernel.cli import app

runner = CliRunner()
pytestmark = pytest.mark.usefixtures("eval_dsn")


def _tune(suite: str, data: Path, out: Path, *extra: str) -> dict[str, Any]:
    args = ["tune", suite, "--data", str(data), "--json", str(out), *extra]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    report: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    assert report["suite"] == f"{suite} sweep"
    return report


def _non_increasing(values: list[float]) -> bool:
    return all(b <= a for a, b in itertools.pairwise(values))


def _check_table(report: dict[str, Any], count: int) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = report["tables"]["sweep"]
    thresholds = [r["threshold"] for r in rows]
    assert len(rows) == count and thresholds == sorted(thresholds)
    # A higher similarity threshold can only merge (or flag) fewer pairs.
    assert _non_increasing([r["recall"] for r in rows])
    assert _non_increasing([r["pos"] for r in rows])
    best = report["metrics"]["best_threshold"]
    assert best in thresholds
    top = max(r["f1"] for r in rows)
    assert next(r for r in rows if r["threshold"] == best)["f1"] == top
    return rows


def test_dedup_decision_sweep_through_the_learn_pipeline(dedup_pairs: Path, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")  # the plot extra (part of the dev extra)
    png = tmp_path / "dedup.png"
    report = _tune(
        "dedup", dedup_pairs, tmp_path / "d.json", "--values", "0.1:0.9:0.2", "--plot", str(png)
    )
    _check_table(report, 5)
    assert report["metrics"]["default_threshold"] == 0.33
    assert "heart.fact_dedup_similarity" in report["notes"][0]
    assert png.read_bytes().startswith(b"\x89PNG")


def test_raw_cosine_sweeps_of_stsb_and_mrpc(stsb_tsv: Path, mrpc_tsv: Path, tmp_path: Path) -> None:
    stsb = _tune("stsb", stsb_tsv, tmp_path / "s.json", "--values", "0.0:1.0:0.1")
    rows = _check_table(stsb, 11)
    assert rows[0]["recall"] == 1.0  # every cosine of unit vectors is >= 0 here
    mrpc = _tune("dedup", mrpc_tsv, tmp_path / "m.json", "--param", "cosine")
    _check_table(mrpc, 15)
    assert "default_threshold" not in mrpc["metrics"]


def test_gate_sweep_of_the_classifier_threshold(gate_rows: Path, tmp_path: Path) -> None:
    report = _tune("gate", gate_rows, tmp_path / "g.json", "--values", "0,0.5,1")
    rows = report["tables"]["sweep"]
    assert [r["threshold"] for r in rows] == [0, 0.5, 1]
    pos = [r["pos"] for r in rows]
    assert pos == sorted(pos, reverse=True) and pos[0] > pos[-1]  # a higher cut records less


def test_gate_sweep_of_the_description_length(gate_rows: Path, tmp_path: Path) -> None:
    report = _tune(
        "gate", gate_rows, tmp_path / "g.json",
        "--param", "brain.min_description_chars", "--values", "0,40,400",
    )  # fmt: skip
    rows = report["tables"]["sweep"]
    assert [r["threshold"] for r in rows] == [0, 40, 400]
    assert rows[-1]["pos"] <= rows[0]["pos"]  # a longer minimum records no more


def test_refusals_are_one_error_line(
    admission_rows: Path, dedup_pairs: Path, tmp_path: Path
) -> None:
    cases = [
        (["tune", "admission", "--data", str(admission_rows)], "rule-based"),
        (["tune", "dedup", "--data", str(dedup_pairs), "--param", "heart.nope"], "unknown"),
        (["tune", "dedup", "--data", str(dedup_pairs), "--values", "0.5:2:0.5"],
         "heart.fact_dedup_similarity = 1.5"),
        (["tune", "dedup", "--data", str(dedup_pairs), "--values", "a:b"], "unreadable"),
        (["tune", "stsb", "--data", str(dedup_pairs), "--param", "heart.fact_neighbours"],
         "raw cosine"),
    ]  # fmt: skip
    for args, needle in cases:
        result = runner.invoke(app, args)
        assert result.exit_code == 1, (args, result.output)
        assert "error:" in result.output and needle in result.output
        assert "Traceback" not in result.output
