"""``memory-kernel eval ku --judge``: after learning, every agent is consolidated with a
judge on a real OpenAI-compatible HTTP server (127.0.0.1) that answers from the test's
labels; the figures are those after its answers."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memory_kernel.cli import app
from tests.httpserver import Reply, Request, chat_reply, serve
from tests.judge_checks import fact_check

runner = CliRunner()
pytestmark = pytest.mark.usefixtures("eval_dsn")

# A value change the rules leave to the judge (the update band asks about it), and a
# look-alike of another entity that must stay current.
PAIRS: list[dict[str, Any]] = [
    {"id": "u1", "topic": "how many P1 bugs are open",
     "old_fact": "There are 7 open P1 bugs on the board.",
     "new_fact": "After this morning's triage we're down to just 2 P1s still open.",
     "expected_current": "2", "label": "update"},
    {"id": "d1", "topic": "how many desks does the Austin office have",
     "old_fact": "The Austin office has 40 desks.", "new_fact": "The Boston office has 55 desks.",
     "expected_current": None, "label": "distinct"},
]  # fmt: skip
UPDATES = {frozenset((p["old_fact"], p["new_fact"])) for p in PAIRS if p["label"] == "update"}


def _answer(request: Request) -> Reply:
    """Supersede an update pair by the fact stated last, as the prompt tells a model to (no
    text says which is newer); keep anything else."""
    prompt = request.json()["messages"][1]["content"]
    check = fact_check(prompt)
    if check is not None:
        return chat_reply(json.dumps(check))
    facts = json.loads(prompt)["facts"]
    update = frozenset(f["content"] for f in facts) in UPDATES
    latest = max(facts, key=lambda f: datetime.fromisoformat(f["stated_at"]))
    winner = latest["fact_id"] if update else None
    verdict = {"decision": "supersede" if winner else "keep_both", "winner_id": winner,
               "merged_content": None, "reason": "from the test's labels"}  # fmt: skip
    return chat_reply(json.dumps(verdict))


def _run(data: Path, out: Path, *extra: str) -> Any:
    return runner.invoke(app, ["eval", "ku", "--data", str(data), "--json", str(out), *extra])


def test_the_judge_retires_the_stale_value_and_keeps_the_look_alike(tmp_path: Path) -> None:
    data = tmp_path / "ku.jsonl"
    data.write_text("".join(json.dumps(p) + "\n" for p in PAIRS), encoding="utf-8")
    plain = _run(data, tmp_path / "p.json")
    assert plain.exit_code == 0, plain.output
    before = json.loads((tmp_path / "p.json").read_text(encoding="utf-8"))["metrics"]
    assert before["stale_still_active"] == 1 and "judge_calls" not in before
    with serve(_answer) as server:
        result = _run(data, tmp_path / "j.json", "--judge", f"openai:tiny@{server.url}/v1")
        assert result.exit_code == 0, result.output
        assert server.requests
    report = json.loads((tmp_path / "j.json").read_text(encoding="utf-8"))
    metrics = report["metrics"]
    assert metrics["stale_still_active"] == 0 and metrics["shared_stale_still_active"] == 0
    assert metrics["wrongly_superseded"] == 0 and metrics["shared_wrongly_superseded"] == 0
    # Once alone and once in the shared agent; each answer is kept, never asked again.
    assert metrics["judge_superseded"] == 2 and metrics["judge_calls"] >= 1
    prompts = [r.json()["messages"][1]["content"] for r in server.requests]
    assert metrics["judge_questions"] == sum(fact_check(p) is None for p in prompts)
    assert any("with a judge" in note for note in report["notes"])


def test_cross_validation_with_a_judge_answers_in_each_held_out_fold(tmp_path: Path) -> None:
    rows = [dict(p, id=f"{p['id']}-{n}") for n in range(2) for p in PAIRS]
    data = tmp_path / "ku.jsonl"
    data.write_text("".join(json.dumps(p) + "\n" for p in rows), encoding="utf-8")
    plain = _run(data, tmp_path / "p.json", "--folds", "2")
    assert plain.exit_code == 0, plain.output
    with serve(_answer) as server:
        judged = _run(data, tmp_path / "j.json", "--folds", "2", "--judge",
                      f"openai:m@{server.url}/v1")  # fmt: skip
        assert judged.exit_code == 0, judged.output

    def cv(path: Path) -> dict[str, Any]:
        return dict(json.loads(path.read_text(encoding="utf-8"))["cv"]["metrics"])

    assert cv(tmp_path / "p.json")["stale_still_active"]["min"] >= 1  # each fold, without it
    judged_cv = cv(tmp_path / "j.json")
    assert judged_cv["stale_still_active"]["max"] == 0
    assert judged_cv["wrongly_superseded"]["max"] == 0
    refused = runner.invoke(
        app, ["eval", "admission", "--data", str(data), "--judge", "openai:m@x"]
    )
    assert refused.exit_code != 0 and "--judge" in refused.output


def test_a_judge_that_supersedes_everything_retires_no_look_alike_and_is_named(
    tmp_path: Path,
) -> None:
    """Its answers pass every rail (the winner is a fact it was asked about); the check
    questions keep them out, and the report says so."""
    data = tmp_path / "ku.jsonl"
    data.write_text("".join(json.dumps(p) + "\n" for p in PAIRS), encoding="utf-8")

    def newest(request: Request) -> Reply:
        facts = json.loads(request.json()["messages"][1]["content"])["facts"]
        latest = max(facts, key=lambda f: datetime.fromisoformat(f["stated_at"]))
        verdict = {"decision": "supersede", "winner_id": latest["fact_id"], "reason": "newer"}
        return chat_reply(json.dumps(verdict))

    with serve(newest) as server:
        result = _run(data, tmp_path / "j.json", "--judge", f"openai:yes@{server.url}/v1")
        assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "j.json").read_text(encoding="utf-8"))
    metrics = report["metrics"]
    assert metrics["judge_superseded"] == 0 and metrics["judge_questions"] >= 1
    assert metrics["wrongly_superseded"] == 0 and metrics["shared_wrongly_superseded"] == 0
    assert any("1 of 2 check questions" in note for note in report["notes"]), report["notes"]
