"""The pure parts of the harness: targets, sweep grid and best value, config overrides,
embedder names, and the plot extra being optional."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from memory_kernel.config import MemoryKernelConfig
from memory_kernel.errors import ConfigError
from memory_kernel.eval.embedders import close_embedder, embedder_from_name
from memory_kernel.eval.plot import PlotUnavailableError, check_plottable, plot_report
from memory_kernel.eval.report import SuiteReport
from memory_kernel.eval.sweep import best_value, override, parse_values
from memory_kernel.eval.targets import parse_target, verdict, verdicts


@pytest.mark.parametrize(
    ("target", "parsed"),
    [
        (">= 0.9", (">=", 0.9)),
        ("0", ("=", 0.0)),
        ("= 6", ("=", 6.0)),
        ("0 (seed: < 0.05)", ("=", 0.0)),
        ("<= 1 row", ("<=", 1.0)),
        ("seed: < 0.05", ("<", 0.05)),
        ("see the notes", None),
    ],
)
def test_targets_read_their_first_comparison(target: str, parsed: tuple[str, float] | None) -> None:
    assert parse_target(target) == parsed


def test_verdicts_met_missed_and_unknown() -> None:
    assert verdict(0.95, ">= 0.9") is True
    assert verdict(0.85, ">= 0.9") is False
    assert verdict(2, "<= 1 row") is False
    assert verdict(0.5, "qualitative") is None
    checks = verdicts({"f1": 1.0, "missed": 0}, {"f1": ">= 0.9", "missed": "0", "absent": "1"})
    assert checks == {"f1": True, "missed": True, "absent": False}


def test_report_json_carries_the_verdicts() -> None:
    report = SuiteReport(
        suite="x", data="d", embedder="e", metrics={"f1": 0.5}, targets={"f1": ">= 0.9"}
    )
    assert report.model_dump(mode="json")["verdicts"] == {"f1": False}


def test_value_grids() -> None:
    assert parse_values("0.2:0.4:0.1") == [0.2, 0.3, 0.4]
    assert parse_values("0:60:20") == [0.0, 20.0, 40.0, 60.0]
    assert parse_values("0.5, 0.3,0.5") == [0.3, 0.5]
    for bad in ("0.5:0.1:0.1", "0:1:0", "x", "0:1000:0.001", ""):
        with pytest.raises(ConfigError):
            parse_values(bad)


def test_best_value_is_the_middle_of_the_widest_top_plateau() -> None:
    values = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7]
    assert best_value(values, [0.5, 0.9, 0.7, 0.9, 0.9, 0.9, 0.4]) == 0.5
    assert best_value(values, [0.9, 0.9, 0.1, 0.9, 0.9, 0.2, 0.1]) == 0.1  # first of equals
    assert best_value([1.0], [0.0]) == 1.0


def test_override_validates_and_leaves_the_rest_alone() -> None:
    base = MemoryKernelConfig()
    changed = override(base, "heart.fact_dedup_similarity", 0.5)
    assert changed.heart.fact_dedup_similarity == 0.5
    assert base.heart.fact_dedup_similarity == 0.33  # frozen: the original is untouched
    assert changed.heart.model_dump(exclude={"fact_dedup_similarity"}) == base.heart.model_dump(
        exclude={"fact_dedup_similarity"}
    )
    assert changed.brain == base.brain
    assert override(base, "brain.min_description_chars", 40.0).brain.min_description_chars == 40
    for param, value in (
        ("heart.fact_dedup_similarity", 1.5),
        ("brain.min_description_chars", 2.5),
        ("heart.nope", 0.5),
        ("nope.fact", 0.5),
        ("storage", 0.5),
    ):
        with pytest.raises(ConfigError):
            override(base, param, value)


def test_embedder_names(monkeypatch: pytest.MonkeyPatch) -> None:
    assert embedder_from_name("hashing").name.startswith("hashing")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")
    known = embedder_from_name("openai:text-embedding-3-small@http://127.0.0.1:9/v1")
    assert known.name == "openai:text-embedding-3-small" and known.dim == 1536
    local = embedder_from_name("openai:nomic-embed-text@http://127.0.0.1:9/v1#768")
    assert local.dim == 768
    for bad in ("openai:nomic-embed-text@http://127.0.0.1:9/v1", "openai:m", "bogus", "hybrid:x"):
        with pytest.raises(ConfigError):
            embedder_from_name(bad)


async def test_hybrid_embedder_names(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("model2vec", reason="the static extra is not installed")
    assert (embedder_from_name("hybrid").name, embedder_from_name("static").dim) == (
        "hybrid-v1-512",
        128,
    )
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")
    remote = embedder_from_name("hybrid:openai:nomic-embed-text@http://127.0.0.1:9/v1#768")
    assert remote.name == "hybrid:hashing-v1-384+openai:nomic-embed-text@0.5"
    assert remote.dim == 384 + 768
    await close_embedder(remote)  # closes the HTTP half


def test_plot_needs_matplotlib_and_a_curve(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="has no curve"):
        check_plottable("gate", sweep=False)
    check_plottable("gate", sweep=True)
    report = SuiteReport(suite="gate", data="d", embedder="e")
    with pytest.raises(ConfigError, match="no plot"):
        plot_report(report, tmp_path / "x.png")
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if not installed
    with pytest.raises(PlotUnavailableError, match=r"memory-kernel\[plot\]"):
        check_plottable("locomo", sweep=False)


def test_sweep_report_names_the_best_value_and_a_plateau_at_the_grid_edge() -> None:
    from memory_kernel.embeddings import HashingEmbedder
    from memory_kernel.eval.sweep import SWEEPS, _report

    rows = [
        {"threshold": t, "precision": 1.0, "recall": r, "f1": f, "pos": 1}
        for t, r, f in ((0.1, 1.0, 0.9), (0.2, 1.0, 0.9), (0.3, 0.5, 0.6))
    ]
    report = _report(
        "dedup", Path("d"), HashingEmbedder(), SWEEPS["dedup"], "heart.fact_dedup_similarity", rows
    )
    assert report.metrics["best_threshold"] == 0.1  # lower middle of [0.1, 0.2]
    assert report.metrics["default_threshold"] == 0.33
    assert any("end of the grid" in note for note in report.notes)
