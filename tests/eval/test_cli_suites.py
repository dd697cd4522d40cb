"""``memory-kernel eval``: every suite runs from the command line on a small synthetic file,
prints its summary, writes parseable JSON, and gives the same JSON twice (the default
embedder, ``hybrid-v1-512``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memory_kernel.cli import app
from memory_kernel.embeddings import HYBRID_NAME

runner = CliRunner()
pytestmark = pytest.mark.usefixtures("eval_dsn")


def _eval(suite: str, data: Path, out: Path, *extra: str) -> dict[str, Any]:
    result = runner.invoke(app, ["eval", suite, "--data", str(data), "--json", str(out), *extra])
    assert result.exit_code == 0, result.output
    assert f"{suite}:" in result.output  # the summary line
    report: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    assert report["suite"] == suite
    assert report["embedder"] == HYBRID_NAME  # the default embedder
    assert report["elapsed_s"] >= 0
    assert set(report["verdicts"]) == set(report["targets"])
    return report


def _unit(report: dict[str, Any], *names: str) -> None:
    for name in names:
        assert 0.0 <= report["metrics"][name] <= 1.0, name


def test_dedup_pairs(dedup_pairs: Path, tmp_path: Path) -> None:
    report = _eval("dedup", dedup_pairs, tmp_path / "r.json")
    assert report["metrics"]["pairs"] == 6
    _unit(report, "precision", "recall", "accuracy", "f1")
    assert report["targets"] == {"accuracy": ">= 0.85", "negatives_merged": "0"}  # issue 21
    met = report["metrics"]["negatives_merged"] == 0
    assert report["verdicts"]["negatives_merged"] is met


def test_dedup_mrpc(mrpc_tsv: Path, tmp_path: Path) -> None:
    report = _eval("dedup", mrpc_tsv, tmp_path / "r.json")
    assert report["metrics"]["pairs"] == 4
    _unit(report, "cosine_roc_auc", "cosine_precision", "cosine_recall")
    assert "format: mrpc" in report["notes"][0]


def test_stsb(stsb_tsv: Path, tmp_path: Path) -> None:
    report = _eval("stsb", stsb_tsv, tmp_path / "r.json")
    assert report["metrics"]["pairs"] == 6
    assert -1.0 <= report["metrics"]["spearman"] <= 1.0


def test_admission(admission_rows: Path, tmp_path: Path) -> None:
    report = _eval("admission", admission_rows, tmp_path / "r.json")
    assert report["metrics"]["rows"] == 4
    _unit(report, "precision", "recall", "f1", "accuracy")


def test_gate(gate_rows: Path, tmp_path: Path) -> None:
    report = _eval("gate", gate_rows, tmp_path / "r.json")
    assert report["metrics"]["rows"] == 5
    confusion = {row["label"]: row for row in report["tables"]["confusion"]}
    assert confusion["decision"]["rows"] == 2 and confusion["noise"]["rows"] == 3


def test_ku(ku_pairs: Path, tmp_path: Path) -> None:
    report = _eval("ku", ku_pairs, tmp_path / "r.json")
    assert report["metrics"]["pairs"] == 2
    assert 0 <= report["metrics"]["newest_value_at_1"] <= 2


def test_ku_names_the_fact_of_another_pair_that_marks_one(tmp_path: Path) -> None:
    """In the store of every pair, a fact marked as replaced by another pair's fact says
    which: what the store figures count as a mark by a stranger, to be read."""
    rows = [
        {"id": "hens", "label": "distinct", "topic": "How many hens does Ilse have?",
         "old_fact": "Ilse keeps 4 hens in the backyard coop.",
         "new_fact": "Ilse's neighbour keeps two goats."},
        {"id": "physio", "label": "update", "topic": "Where does Ilse go for physio?",
         "old_fact": "Ilse goes to physio at the clinic on Main Street.",
         "new_fact": "Ilse's physio moved her to 2 sessions a week at their new site."},
    ]  # fmt: skip
    data = tmp_path / "ku.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    shared = {r["id"]: r for r in _eval("ku", data, tmp_path / "r.json")["tables"]["shared_agent"]}
    assert shared["hens"]["old_dated_by_other"]
    assert shared["hens"]["dated_by"] == rows[1]["new_fact"]
    assert not shared["physio"]["old_dated_by_other"] and shared["physio"]["dated_by"] == ""


def test_locomo_with_plot(locomo_json: Path, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")  # the plot extra (part of the dev extra)
    png = tmp_path / "plots" / "locomo.png"
    report = _eval("locomo", locomo_json, tmp_path / "r.json", "--plot", str(png))
    # 4 questions: one without evidence is skipped, "D9:99" does not resolve.
    assert report["metrics"]["questions"] == 3
    _unit(report, "kernel_recall@10", "context500_recall", "naive_context_recall")
    assert png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


@pytest.mark.parametrize("suite", ["dedup", "locomo"])
def test_same_json_twice_with_the_default_embedder(
    suite: str, dedup_pairs: Path, locomo_json: Path, tmp_path: Path
) -> None:
    data = dedup_pairs if suite == "dedup" else locomo_json
    first = _eval(suite, data, tmp_path / "1.json")
    second = _eval(suite, data, tmp_path / "2.json")
    first.pop("elapsed_s"), second.pop("elapsed_s")
    assert first == second


def test_plot_of_a_suite_without_a_curve_is_refused_before_running(
    ku_pairs: Path, tmp_path: Path
) -> None:
    png = tmp_path / "ku.png"
    result = runner.invoke(app, ["eval", "ku", "--data", str(ku_pairs), "--plot", str(png)])
    assert result.exit_code == 1
    assert "has no curve" in result.output and "memory-kernel tune" in result.output
    assert "Traceback" not in result.output and not png.exists()


def test_a_configuration_file_is_what_the_suite_measures(gate_rows: Path, tmp_path: Path) -> None:
    """``--config``: the suite runs under that configuration, in the development run and in
    every fold (where only the fitted weights replace its own)."""
    folds = ("--folds", "2")
    plain = _eval("gate", gate_rows, tmp_path / "p.json", *folds)
    # No frame starts a deliberation: only what the agent recorded with its tool (g1) is.
    strict = tmp_path / "strict.json"
    brain = {"auto_deliberation_frames": [], "decision_threshold": 0.9}
    strict.write_text(json.dumps({"brain": brain}), encoding="utf-8")
    report = _eval("gate", gate_rows, tmp_path / "s.json", "--config", str(strict), *folds)
    assert report["metrics"]["content_recorded"] == 1 < plain["metrics"]["content_recorded"]
    # Each fold's classifier is fitted and read under it (its threshold with it).
    assert "decision_threshold=0.9" in report["cv"]["fitted"]
    assert "decision_threshold=0.5" in plain["cv"]["fitted"]
    assert report["cv"]["metrics"]["content_recorded"]["max"] <= 1


def test_a_broken_configuration_file_or_a_suite_without_one_is_refused(
    stsb_tsv: Path, gate_rows: Path, tmp_path: Path
) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"brain": {"no_such_field": 1}}), encoding="utf-8")
    result = runner.invoke(app, ["eval", "gate", "--data", str(gate_rows), "--config", str(broken)])
    assert result.exit_code == 1 and "no_such_field" in result.output
    assert "Traceback" not in result.output
    refused = runner.invoke(app, ["eval", "stsb", "--data", str(stsb_tsv), "--config", str(broken)])
    assert refused.exit_code == 1 and "takes no --config" in refused.output


def test_missing_data_file_and_unknown_suite_are_one_error_line(tmp_path: Path) -> None:
    missing = runner.invoke(app, ["eval", "dedup", "--data", str(tmp_path / "nope.jsonl")])
    assert missing.exit_code == 1 and "no such data file" in missing.output
    unknown = runner.invoke(app, ["eval", "nosuch", "--data", str(tmp_path)])
    assert unknown.exit_code == 1 and "unknown suite" in unknown.output


async def test_a_failing_embedder_gives_no_dedup_measurement(
    eval_dsn: str, dedup_pairs: Path
) -> None:
    from memory_kernel.errors import EmbedderError
    from memory_kernel.eval import dedup
    from memory_kernel.testing import FakeEmbedder

    embedder = FakeEmbedder()
    embedder.fail = RuntimeError("model server down")
    _, pairs = dedup.load_pairs(dedup_pairs)
    with pytest.raises(EmbedderError, match="no measurement"):
        await dedup.decide(pairs, embedder)
