"""Small synthetic data files in every format ``memory-kernel eval`` reads, written into the
test's tmp_path (the real evaluation data is never copied into the repository), and the
evaluation store pointed at the session's test server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def eval_dsn(pg_dsn: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """Evaluation kernels use fresh schemas of the test server (no embedded start per run)."""
    monkeypatch.setenv("MEMORY_KERNEL_EVAL_DSN", pg_dsn)
    return pg_dsn


@pytest.fixture
def dedup_pairs(tmp_path: Path) -> Path:
    return _jsonl(
        tmp_path / "dedup.jsonl",
        [
            {"id": "p1", "a": "The staging database listens on port 5433.",
             "b": "Port 5433 is where the staging database listens.", "label": 1},
            {"id": "p2", "a": "Our team meets every Tuesday at 10am in room B.",
             "b": "Every Tuesday at 10am our team meets in room B.", "label": 1},
            {"id": "p3", "a": "Priya owns the billing service.",
             "b": "The billing service is owned by Priya.", "label": 1},
            {"id": "n1", "a": "The staging database listens on port 5433.",
             "b": "The staging database listens on port 6543.", "label": 0},
            {"id": "n2", "a": "Marco likes green tea in the morning.",
             "b": "Marco does not like green tea in the morning.", "label": 0},
            {"id": "n3", "a": "The release train leaves on Friday.",
             "b": "The office plants need water on Friday.", "label": 0},
        ],
    )  # fmt: skip


@pytest.fixture
def mrpc_tsv(tmp_path: Path) -> Path:
    rows = [
        "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String",
        "1\t11\t12\tThe company said profits rose sharply in May.\t"
        "Profits rose sharply in May, the company said.",
        "0\t13\t14\tThe mayor opened the new bridge on Monday.\t"
        "Heavy rain closed two schools on Monday.",
        "1\t15\t16\tShares of the bank fell 3 percent on Tuesday.\t"
        "The bank's shares fell 3 percent on Tuesday.",
        "0\t17\t18\tThe team won the final after extra time.\t"
        "The final was postponed because of the storm.",
    ]
    path = tmp_path / "mrpc.txt"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def stsb_tsv(tmp_path: Path) -> Path:
    pairs = [
        (5.0, "A man is playing a guitar.", "A man is playing a guitar."),
        (4.2, "A woman is slicing an onion.", "A woman slices an onion."),
        (3.0, "Two dogs run in a field.", "Two dogs are playing outside."),
        (1.5, "A child rides a bicycle.", "A man drives a car."),
        (0.2, "The stock market fell today.", "A cat sleeps on the sofa."),
        (4.8, "The plane landed safely.", "The plane has landed safely."),
    ]
    lines = [f"main-captions\tMSRvid\t2012test\t{n:04d}\t{s}\t{a}\t{b}"
             for n, (s, a, b) in enumerate(pairs)]  # fmt: skip
    path = tmp_path / "sts.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def admission_rows(tmp_path: Path) -> Path:
    return _jsonl(
        tmp_path / "admission.jsonl",
        [
            {"id": "a1", "content": "The deploy key for project Falcon rotates on the 1st.",
             "subject": "deploy key", "category": "ops", "label": "admit"},
            {"id": "a2", "content": "Hey! Thanks a lot!", "subject": None, "category": None,
             "label": "reject"},
            {"id": "a3", "content": "Jana's flight to Lisbon lands at 14:20 on 3 June.",
             "subject": "Jana", "category": "travel", "label": "admit"},
            {"id": "a4", "content": "We talked about some stuff.", "subject": None,
             "category": None, "label": "reject"},
        ],
    )  # fmt: skip


@pytest.fixture
def gate_rows(tmp_path: Path) -> Path:
    return _jsonl(
        tmp_path / "gate.jsonl",
        [
            {"id": "g1", "frame": "decision", "tool_names": ["record_decision"],
             "response_text": "We will keep vectors in PostgreSQL with pgvector because the "
                              "rows and their embeddings then commit together.",
             "label": "decision"},
            {"id": "g2", "frame": "decision", "tool_names": [], "response_text": "Done! ✅",
             "label": "noise"},
            {"id": "g3", "frame": "conversation", "tool_names": [],
             "response_text": "Hey! How can I help you today?", "label": "noise"},
            {"id": "g4", "frame": "decision", "tool_names": [],
             "response_text": "Decided to cap the context at 1500 tokens, since longer "
                              "prompts made the agent slower without better answers.",
             "label": "decision"},
            {"id": "g5", "frame": "task", "tool_names": ["bash"],
             "response_text": "Status: 3 of 5 steps finished, running the tests now.",
             "label": "noise"},
        ],
    )  # fmt: skip


@pytest.fixture
def ku_pairs(tmp_path: Path) -> Path:
    return _jsonl(
        tmp_path / "ku.jsonl",
        [
            {"qi": 0, "topic": "office plant count", "old_fact": "I have 3 plants in my office.",
             "new_fact": "I have 5 plants in my office.", "expected_current": "5"},
            {"qi": 1, "topic": "commute by bike", "old_fact": "I commute by bike twice a week.",
             "new_fact": "I commute by bike four times a week.", "expected_current": "four"},
        ],
    )  # fmt: skip


def _session(n: int, turns: list[tuple[str, str]]) -> list[dict[str, str]]:
    return [{"speaker": who, "dia_id": f"D{n}:{i}", "text": text}
            for i, (who, text) in enumerate(turns, 1)]  # fmt: skip


@pytest.fixture
def locomo_json(tmp_path: Path) -> Path:
    conversation = {
        "speaker_a": "Ana",
        "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": _session(1, [
            ("Ana", "I adopted a grey kitten called Pixel last week."),
            ("Ben", "Nice! I started training for the Berlin marathon."),
            ("Ana", "My sister moved to Porto for a new job."),
        ]),
        "session_2_date_time": "10:12 am on 20 June, 2023",
        "session_2": _session(2, [
            ("Ben", "The marathon went well, I finished in 3 hours 41 minutes."),
            ("Ana", "Pixel learned to open the kitchen cupboard."),
            ("Ben", "I am thinking about learning the cello."),
        ]),
    }  # fmt: skip
    observation = {
        "session_1_observation": {
            "Ana": [["Ana adopted a grey kitten named Pixel.", "D1:1"],
                    ["Ana's sister moved to Porto for work.", "D1:3"]],
            "Ben": [["Ben is training for the Berlin marathon.", "D1:2"]],
        },
        "session_2_observation": {
            "Ben": [["Ben finished the marathon in 3 hours 41 minutes.", "D2:1"]],
        },
    }  # fmt: skip
    qa = [
        {"question": "What is the name of Ana's kitten?", "evidence": ["D1:1"], "category": 4},
        {"question": "How long did Ben take for the marathon?", "evidence": ["D2:1"],
         "category": 4},
        {"question": "Where did Ana's sister move?", "evidence": ["D1:3; D9:99"], "category": 1},
        {"question": "Which instrument does Ben consider?", "evidence": [], "category": 3},
    ]  # fmt: skip
    raw = [{"sample_id": "conv-t1", "conversation": conversation, "observation": observation,
            "qa": qa}]  # fmt: skip
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    return path


@pytest.fixture
def dedup_kinds(tmp_path: Path) -> Path:
    """The authored format: pairs with a ``kind``."""
    return _jsonl(
        tmp_path / "dedup_kinds.jsonl",
        [
            {"id": "k1", "a": "Priya owns the billing service.",
             "b": "The billing service is owned by Priya.", "label": 1, "kind": "reorder"},
            {"id": "k2", "a": "Our team meets every Tuesday at 10am in room B.",
             "b": "Every Tuesday at 10am our team meets in room B.", "label": 1,
             "kind": "reorder"},
            {"id": "k3", "a": "The staging database listens on port 5433.",
             "b": "The staging database listens on port 6543.", "label": 0,
             "kind": "value_change"},
            {"id": "k4", "a": "Marco likes green tea in the morning.",
             "b": "Marco does not like green tea in the morning.", "label": 0, "kind": "negation"},
        ],
    )  # fmt: skip


@pytest.fixture
def ku_mixed(tmp_path: Path) -> Path:
    """Update pairs (``id`` instead of ``qi``) and look-alike distinct pairs in one file."""
    return _jsonl(
        tmp_path / "ku_mixed.jsonl",
        [
            {"id": "u1", "topic": "office plant count", "old_fact": "I have 3 plants in my office.",
             "new_fact": "I have 5 plants in my office.", "expected_current": "5",
             "kind": "count", "label": "update"},
            {"id": "u2", "topic": "commute by bike",
             "old_fact": "I commute by bike twice a week.",
             "new_fact": "I commute by bike four times a week.", "expected_current": "four",
             "kind": "count", "label": "update"},
            {"id": "d1", "topic": "staging cluster version",
             "old_fact": "The staging cluster runs Kubernetes 1.28.",
             "new_fact": "The dev cluster runs Kubernetes 1.29.", "expected_current": None,
             "kind": "different_entity", "label": "distinct"},
            {"id": "d2", "topic": "Austin office desks",
             "old_fact": "The Austin office has 40 desks.",
             "new_fact": "The Boston office has 55 desks.", "expected_current": None,
             "kind": "different_entity", "label": "distinct"},
        ],
    )  # fmt: skip
