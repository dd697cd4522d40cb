"""``memory-kernel eval gate --judge``: after the replay, each agent is consolidated with a
judge on a real OpenAI-compatible HTTP server (127.0.0.1) that answers from the test's
labels; the figures are those after it read layer 1's uncertain band."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memory_kernel.cli import app
from tests.gate_texts import (
    CLEAR_DECISION,
    CLEAR_NOISE,
    DECISION_REJECTED,
    NOISE_RECORDED,
)
from tests.httpserver import Reply, Request, chat_reply, serve
from tests.judge_checks import CHECKS

runner = CliRunner()
pytestmark = pytest.mark.usefixtures("eval_dsn")

ROWS = [
    {"id": "noise-in-band", "frame": "decision", "response_text": NOISE_RECORDED, "label": "noise"},
    {"id": "decision-in-band", "frame": "decision", "response_text": DECISION_REJECTED,
     "label": "decision"},
    {"id": "decision", "frame": "decision", "response_text": CLEAR_DECISION, "label": "decision"},
    {"id": "noise", "frame": "decision", "response_text": CLEAR_NOISE, "label": "noise"},
]  # fmt: skip
MORE = [
    ("Sounds good, I'll go with whatever you decide on the venue.", "noise"),
    ("We should probably look at the retry policy at some point.", "noise"),
    ("Using the blue theme for the slides.", "decision"),
    ("Plan: migrate the billing tables first, then the ledger.", "decision"),
    ("Keeping the old endpoint alive until March so partners have time to migrate.", "decision"),
    ("The cache holds user sessions for thirty minutes before they expire.", "noise"),
    ("Not sure yet whether to keep the free tier; revisit after the board meeting.", "noise"),
    ("Postgres over MySQL for the analytics store: we need window functions.", "decision"),
]
DECISIONS = {r["response_text"] for r in ROWS if r["label"] == "decision"} | {
    text for text, label in MORE if label == "decision"
}


def _answer(request: Request) -> Reply:
    answered = json.loads(request.json()["messages"][1]["content"])["agent_answered"]
    made = CHECKS.get(answered, answered in DECISIONS)
    return chat_reply(json.dumps({"is_decision": made, "reason": "label"}))


def _run(data: Path, out: Path, *extra: str) -> Any:
    return runner.invoke(app, ["eval", "gate", "--data", str(data), "--json", str(out), *extra])


def test_the_judge_reads_the_band_and_the_figures_are_after_it(tmp_path: Path) -> None:
    data = tmp_path / "gate.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    plain = _run(data, tmp_path / "p.json")
    assert plain.exit_code == 0, plain.output
    before = json.loads((tmp_path / "p.json").read_text(encoding="utf-8"))["metrics"]
    assert before["content_noise_recorded"] == 1 and before["content_decisions_missed"] == 1
    with serve(_answer) as server:
        result = _run(data, tmp_path / "j.json", "--judge", f"openai:tiny@{server.url}/v1")
        assert result.exit_code == 0, result.output
        # Two agents (frame as given, content only), two responses in the band each, one
        # HTTP request per response (ChatJudge asks the items of a batch one by one), and
        # each agent's run asks the check questions too.
        assert len(server.requests) == 2 * (2 + len(CHECKS))
    report = json.loads((tmp_path / "j.json").read_text(encoding="utf-8"))
    metrics = report["metrics"]
    assert metrics["content_noise_recorded"] == 0 and metrics["content_decisions_missed"] == 0
    assert metrics["noise_recorded"] == 0 and metrics["decisions_missed"] == 0
    assert metrics["judge_questions"] == 4 and metrics["judge_calls"] == 2
    assert metrics["judge_rejected"] == 2 and metrics["judge_restored"] == 2
    assert any("before it: noise" in note for note in report["notes"])


def test_a_judge_that_fails_the_check_questions_changes_no_figure_and_is_named(
    tmp_path: Path,
) -> None:
    """A judge that finds a decision in every answer ("Done! ✅" included) restored noise
    as decisions; the runs' check questions keep its answers out, and the report says why."""
    data = tmp_path / "gate.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    plain = _run(data, tmp_path / "p.json")
    assert plain.exit_code == 0, plain.output

    def always(request: Request) -> Reply:
        return chat_reply(json.dumps({"is_decision": True, "reason": "a choice"}))

    with serve(always) as server:
        result = _run(data, tmp_path / "j.json", "--judge", f"openai:yes@{server.url}/v1")
        assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "j.json").read_text(encoding="utf-8"))
    before = json.loads((tmp_path / "p.json").read_text(encoding="utf-8"))["metrics"]
    metrics = report["metrics"]
    assert {k: metrics[k] for k in before} == before
    assert metrics["judge_fallbacks"] == metrics["judge_questions"] == 4
    assert metrics["judge_restored"] == 0
    assert any("2 of 4 check questions" in note for note in report["notes"]), report["notes"]


def test_cross_validation_with_a_judge_reads_each_held_out_fold(tmp_path: Path) -> None:
    """Each fold's classifier is refitted and its held-out replay read by the judge: the
    judge, answering from the labels, can only take errors away."""
    extra = [
        {"id": f"more-{n}", "frame": "decision", "response_text": text, "label": label}
        for n, (text, label) in enumerate(MORE)
    ]
    rows = ROWS + extra
    data = tmp_path / "gate.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    folds = ["--folds", "2", "--seed", "1"]
    plain = _run(data, tmp_path / "p.json", *folds)
    assert plain.exit_code == 0, plain.output
    with serve(_answer) as server:
        judged = _run(data, tmp_path / "j.json", *folds, "--judge", f"openai:m@{server.url}/v1")
        assert judged.exit_code == 0, judged.output
        assert server.requests  # each held-out fold and the development run were read

    def errors(path: Path) -> float:
        cv = json.loads(path.read_text(encoding="utf-8"))["cv"]["metrics"]
        return float(cv["content_noise_recorded"]["mean"] + cv["content_decisions_missed"]["mean"])

    assert errors(tmp_path / "j.json") <= errors(tmp_path / "p.json")
    refused = runner.invoke(
        app, ["eval", "admission", "--data", str(data), "--judge", "openai:m@x", "--folds", "2"]
    )
    assert refused.exit_code != 0 and "--judge" in refused.output
