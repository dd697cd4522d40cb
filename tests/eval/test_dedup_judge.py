"""``memory-kernel eval dedup --judge``: the pairs ``learn`` kept apart are consolidated with
a judge on a real OpenAI-compatible HTTP server (127.0.0.1) that answers from the test's
labels, and the report says what the judge was asked and what it merged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memory_kernel.cli import app
from tests.httpserver import Reply, Request, chat_reply, serve
from tests.judge_checks import fact_check

runner = CliRunner()
pytestmark = pytest.mark.usefixtures("eval_dsn")

# A restatement the lexical embedder cannot tell (the restatement band asks about it), one
# that learn merges by itself, and two pairs that must stay apart.
PAIRS = [
    {"id": "same-band", "a": "The bakery sells out of sourdough early.",
     "b": "The bakery's sourdough is usually gone by mid-morning.", "label": 1},
    {"id": "same-learn", "a": "Priya owns the billing service.",
     "b": "The billing service is owned by Priya.", "label": 1},
    {"id": "apart-value", "a": "The staging database listens on port 5433.",
     "b": "The staging database listens on port 6543.", "label": 0},
    {"id": "apart-topic", "a": "Our landlord is very slow to answer emails.",
     "b": "The bakery sells out of sourdough early.", "label": 0},
]  # fmt: skip
SAME = {frozenset((p["a"], p["b"])) for p in PAIRS if p["label"] == 1}


def _answer(request: Request) -> Reply:
    """The consolidation judge's answer, from the labels: merge a pair labelled the same."""
    text = request.json()["messages"][1]["content"]
    check = fact_check(text)
    if check is not None:
        return chat_reply(json.dumps(check))
    facts = json.loads(text)["facts"]
    same = frozenset(f["content"] for f in facts) in SAME
    verdict = {"decision": "merge" if same else "keep_both", "winner_id": facts[0]["fact_id"],
               "merged_content": None, "reason": "from the test's labels"}  # fmt: skip
    return chat_reply(json.dumps(verdict))


def _run(data: Path, out: Path, *extra: str) -> Any:
    return runner.invoke(app, ["eval", "dedup", "--data", str(data), "--json", str(out), *extra])


def test_the_judge_merges_what_learn_kept_apart_and_is_counted(tmp_path: Path) -> None:
    data = tmp_path / "pairs.jsonl"
    data.write_text("".join(json.dumps(p) + "\n" for p in PAIRS), encoding="utf-8")
    with serve(_answer) as server:
        result = _run(data, tmp_path / "j.json", "--judge", f"openai:tiny@{server.url}/v1")
        assert result.exit_code == 0, result.output
        prompts = [r.json()["messages"][1]["content"] for r in server.requests]
        asked = [json.loads(p) for p in prompts if fact_check(p) is None]
    report = json.loads((tmp_path / "j.json").read_text(encoding="utf-8"))
    metrics = report["metrics"]
    assert metrics["merged_by_learn"] == 1 and metrics["merged_by_consolidation"] == 1
    assert metrics["negatives_merged"] == 0 and metrics["accuracy"] == 1.0
    assert metrics["judge_calls"] == len(asked) >= 1 and metrics["judge_questions"] >= 1
    assert any(q["why_ambiguous"].startswith("possible restatement") for q in asked)
    assert any("judge" in note for note in report["notes"])
    # Without the judge the same file keeps the restatement apart.
    plain = _run(data, tmp_path / "p.json")
    assert plain.exit_code == 0, plain.output
    alone = json.loads((tmp_path / "p.json").read_text(encoding="utf-8"))["metrics"]
    assert alone["accuracy"] == 0.75 and "judge_calls" not in alone


def test_cross_validation_with_a_judge_merges_in_each_held_out_fold(tmp_path: Path) -> None:
    rows = [dict(p, id=f"{p['id']}-{n}") for n in range(2) for p in PAIRS]
    data = tmp_path / "pairs.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with serve(_answer) as server:
        judged = _run(data, tmp_path / "j.json", "--folds", "2", "--judge",
                      f"openai:m@{server.url}/v1")  # fmt: skip
        assert judged.exit_code == 0, judged.output
        asked = sum(fact_check(r.json()["messages"][1]["content"]) is None for r in server.requests)
    report = json.loads((tmp_path / "j.json").read_text(encoding="utf-8"))
    assert asked >= report["metrics"]["judge_questions"] >= 1
    # On rows this few, each fold's refitted duplicate scorer merges the held-out restatement
    # at learn (it learned its twin), so the folds may ask nothing: what this shows is that
    # the judged path runs under --folds and merges no negative.
    cv = report["cv"]["metrics"]
    assert cv["accuracy"]["min"] == 1.0 and cv["negatives_merged"]["max"] == 0


def test_an_unreadable_judge_is_refused_before_anything_runs(tmp_path: Path) -> None:
    data = tmp_path / "pairs.jsonl"
    data.write_text(json.dumps(PAIRS[0]) + "\n", encoding="utf-8")
    bad = _run(data, tmp_path / "r.json", "--judge", "gpt-4o")
    assert bad.exit_code != 0 and "openai:<model>@<base_url>" in bad.output
    other = runner.invoke(app, ["eval", "stsb", "--data", str(data), "--judge", "openai:m@x"])
    assert other.exit_code != 0 and "--judge" in other.output
    assert not (tmp_path / "r.json").exists()


def test_a_judge_that_merges_everything_merges_nothing_and_is_named(tmp_path: Path) -> None:
    """Merging the restatement is right, merging the two facts of other people is not: the
    check questions keep such a judge's answers out, and the report says so."""
    data = tmp_path / "pairs.jsonl"
    data.write_text("".join(json.dumps(p) + "\n" for p in PAIRS), encoding="utf-8")

    def merge(request: Request) -> Reply:
        facts = json.loads(request.json()["messages"][1]["content"])["facts"]
        verdict = {"decision": "merge", "winner_id": facts[0]["fact_id"], "reason": "same"}
        return chat_reply(json.dumps(verdict))

    with serve(merge) as server:
        result = _run(data, tmp_path / "j.json", "--judge", f"openai:yes@{server.url}/v1")
        assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "j.json").read_text(encoding="utf-8"))
    metrics = report["metrics"]
    assert metrics["merged_by_consolidation"] == 0 and metrics["negatives_merged"] == 0
    assert metrics["judge_fallbacks"] == metrics["judge_questions"] >= 1
    assert any("1 of 2 check questions" in note for note in report["notes"]), report["notes"]
