"""``memory-kernel eval conversations``: the three readers, the scoring rules (pure), the
naive baseline, and one run end to end through a real kernel on a tiny authored file."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memory_kernel import EstimatingTokenCounter, HashingEmbedder
from memory_kernel.cli import app
from memory_kernel.embeddings import HYBRID_NAME
from memory_kernel.errors import ConfigError
from memory_kernel.eval.answers import ContextText, date_mentions, normalise
from memory_kernel.eval.conversations import _Replay
from memory_kernel.eval.dialogues import (
    Turn,
    exchanges,
    load_dataset,
    parse_locomo_date,
    parse_longmemeval_date,
)
from memory_kernel.eval.naive import NaiveStore
from memory_kernel.eval.store import eval_kernel
from memory_kernel.heart.extraction.rules import RuleExtractor
from memory_kernel.testing import FrozenClock
from tests.httpserver import Reply, Request, chat_reply, serve


def _write(path: Path, rows: list[dict[str, Any]], *, jsonl: bool) -> Path:
    text = "".join(json.dumps(r) + "\n" for r in rows) if jsonl else json.dumps(rows)
    path.write_text(text, encoding="utf-8")
    return path


def _turns(*pairs: tuple[str, str]) -> list[dict[str, str]]:
    return [{"role": role, "content": content} for role, content in pairs]


AUTHORED = {
    "id": "t01",
    "domain": "test",
    "sessions": [
        {"session_id": "t01_s2", "date": "2024-03-02T10:00:00Z", "turns": _turns(
            ("user", "Update: the team standup moved to Thursday mornings at 9."),
            ("assistant", "Noted, Thursday mornings at 9 from now on."),
            ("user", "Also my cat Miso hates the new vacuum."),
        )},
        {"session_id": "t01_s1", "date": "2024-03-01T09:00:00Z", "turns": _turns(
            ("user", "Our team standup is on Monday mornings."),
            ("user", "My dog is called Biscuit and he is a beagle."),
            ("assistant", "Biscuit the beagle sounds like a lot of fun."),
            ("user", "Can you suggest a name for my new sourdough starter?"),
            ("assistant", "How about Clint Yeastwood?"),
        )},
    ],
    "questions": [
        {"qid": "t01_q1", "question": "What is my dog called?", "answer": "Biscuit",
         "question_date": "2024-03-10T12:00:00Z", "stale_answers": [],
         "type": "single-session-user"},
        {"qid": "t01_q2", "question": "When is the team standup?", "answer": "Thursday",
         "question_date": "2024-03-10T12:00:00Z", "stale_answers": ["Monday"],
         "type": "knowledge-update"},
        {"qid": "t01_q3", "question": "Which name did you suggest for my sourdough starter?",
         "answer": "Clint Yeastwood", "question_date": "2024-03-10T12:00:00Z",
         "stale_answers": [], "type": "single-session-assistant"},
        {"qid": "t01_q4", "question": "What is my brother's job?", "answer": "N/A",
         "question_date": "2024-03-10T12:00:00Z", "stale_answers": [], "type": "abstention"},
    ],
}  # fmt: skip


@pytest.fixture
def authored(tmp_path: Path) -> Path:
    second = {**AUTHORED, "id": "t02"}
    return _write(tmp_path / "conversations.jsonl", [AUTHORED, second], jsonl=True)


def _dia(session: int, turns: list[tuple[str, str]]) -> list[dict[str, str]]:
    return [{"speaker": who, "dia_id": f"D{session}:{i}", "text": text}
            for i, (who, text) in enumerate(turns, 1)]  # fmt: skip


@pytest.fixture
def locomo(tmp_path: Path) -> Path:
    session_2 = _dia(2, [("Ben", "Morning! How was the weekend?"),
                         ("Ana", "Great, we hiked up to the lighthouse.")])  # fmt: skip
    session_2[1]["blip_caption"] = "a photo of a white lighthouse"
    conversation = {
        "speaker_a": "Ana", "speaker_b": "Ben",
        "session_2_date_time": "10:12 am on 20 June, 2023", "session_2": session_2,
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": _dia(1, [("Ana", "I adopted a grey kitten called Pixel."),
                              ("Ben", "Lovely! I am training for the Berlin marathon.")]),
    }  # fmt: skip
    qa = [
        {"question": "What is Ana's kitten called?", "answer": "Pixel", "evidence": ["D1:1"],
         "category": 4},
        {"question": "Where did Ana hike?", "answer": "the lighthouse",
         "evidence": ["D2:2; D9:9"], "category": 2},
        {"question": "What is Ben's dog called?", "adversarial_answer": "Rex",
         "evidence": ["D1:2"], "category": 5},
        {"question": "What does Ben eat?", "answer": "pasta", "evidence": ["D7:1"],
         "category": 1},
    ]  # fmt: skip
    raw = [{"sample_id": "conv-t", "conversation": conversation, "qa": qa}]
    return _write(tmp_path / "locomo.json", raw, jsonl=False)


@pytest.fixture
def longmemeval(tmp_path: Path) -> Path:
    instance = {
        "question_id": "lme1",
        "question_type": "knowledge-update",
        "question": "How many bikes do I own now?",
        "answer": 3,
        "question_date": "2023/06/01 (Thu) 10:00",
        "haystack_dates": ["2023/05/20 (Sat) 02:21", "2023/05/02 (Tue) 18:05"],
        "haystack_session_ids": ["late", "early"],
        "haystack_sessions": [
            [{"role": "user", "content": "I just bought a third bike!", "has_answer": True},
             {"role": "assistant", "content": "Congratulations on bike number three."}],
            [{"role": "user", "content": "I own two bikes."},
             {"role": "assistant", "content": "Two bikes is a good number."}],
        ],
    }  # fmt: skip
    abstain = {**instance, "question_id": "lme2_abs", "question": "How many cars do I own?",
               "answer": "You did not mention cars."}  # fmt: skip
    return _write(tmp_path / "lme.json", [instance, abstain], jsonl=False)


# -- readers -----------------------------------------------------------------------------


def test_authored_reader_sorts_sessions_and_keeps_questions(authored: Path) -> None:
    dataset = load_dataset(authored)
    assert dataset.format == "conversations" and len(dataset.dialogues) == 2
    dialogue = dataset.dialogues[0]
    assert [s.session_id for s in dialogue.sessions] == ["t01_s1", "t01_s2"]
    assert dialogue.sessions[0].date == datetime(2024, 3, 1, 9, tzinfo=UTC)
    ku = dialogue.questions[1]
    assert (ku.type, ku.answer, ku.stale_answers) == ("knowledge-update", "Thursday", ("Monday",))
    assert ku.date == datetime(2024, 3, 10, 12, tzinfo=UTC) and not ku.evidence
    assert dialogue.questions[3].abstention
    assert len(load_dataset(authored, limit=1).dialogues) == 1


def test_locomo_reader_roles_captions_and_skips(locomo: Path) -> None:
    dataset = load_dataset(locomo)
    assert dataset.format == "locomo"
    (dialogue,) = dataset.dialogues
    first, second = dialogue.sessions  # sorted by date
    assert first.date == parse_locomo_date("1:56 pm on 8 May, 2023")
    assert [t.role for t in first.turns] == ["user", "assistant"]
    assert second.turns[0].role == "assistant"  # Ben is speaker B
    hike = second.turns[1]
    assert hike.content == (
        "Ana: Great, we hiked up to the lighthouse. [image: a photo of a white lighthouse]"
    )
    assert hike.text == "Great, we hiked up to the lighthouse."
    assert [(q.type, q.evidence) for q in dialogue.questions] == [
        ("single-hop", ("I adopted a grey kitten called Pixel.",)),
        ("temporal", ("Great, we hiked up to the lighthouse.",)),
    ]
    assert dataset.skipped == {
        "questions: adversarial (LoCoMo category 5)": 1,
        "questions: no resolvable evidence": 1,
        "evidence ids: resolve to no turn": 2,
    }


def test_longmemeval_reader_dates_evidence_and_abstention(longmemeval: Path) -> None:
    dataset = load_dataset(longmemeval)
    assert dataset.format == "longmemeval" and len(dataset.dialogues) == 2
    first, second = dataset.dialogues
    assert [s.session_id for s in first.sessions] == ["early", "late"]
    assert first.sessions[1].date == datetime(2023, 5, 20, 2, 21, tzinfo=UTC)
    (question,) = first.questions
    assert (question.answer, question.type) == ("3", "knowledge-update")
    assert question.date == datetime(2023, 6, 1, 10, tzinfo=UTC)
    assert question.evidence == ("I just bought a third bike!",)
    assert second.questions[0].abstention


def test_longmemeval_dates() -> None:
    assert parse_longmemeval_date("2023/05/20 (Sat) 02:21") == datetime(
        2023, 5, 20, 2, 21, tzinfo=UTC
    )
    assert parse_longmemeval_date("2023/5/2") == datetime(2023, 5, 2, tzinfo=UTC)
    for bad in ("20/05/2023 02:21", "2023/13/01 (Sun) 00:00", "yesterday"):
        with pytest.raises(ConfigError):
            parse_longmemeval_date(bad)


def test_unknown_format_is_a_config_error(tmp_path: Path) -> None:
    path = _write(tmp_path / "x.json", [{"pairs": []}], jsonl=False)
    with pytest.raises(ConfigError, match="unknown format"):
        load_dataset(path)


def test_exchanges_join_same_role_and_pair_replies() -> None:
    turns = [
        Turn("assistant", "Welcome back."),
        Turn("user", "Hi."),
        Turn("user", "Two things."),
        Turn("assistant", "Sure."),
        Turn("assistant", "  "),
        Turn("user", "Bye."),
    ]
    assert exchanges(turns) == [
        (None, "Welcome back."),
        ("Hi.\nTwo things.", "Sure."),
        ("Bye.", ""),
    ]


# -- scoring rules (pure) ----------------------------------------------------------------


def test_normalise() -> None:
    assert normalise("  The 3:30 PM train, isn't it?  ") == "3 30 pm train isn t it"
    assert normalise("An Apple a day") == "apple day"


def test_containment_is_on_whole_normalised_words() -> None:
    ctx = ContextText("Rates rose 16% in May; Kemi's toast is on the 27th.")
    assert not ctx.contains("6%")
    assert ctx.contains("16 %") and ctx.contains("kemi") and ctx.contains("The 27th")
    assert not ctx.contains("the")  # normalises to nothing: never found
    assert not ctx.contains("toast was")


def test_a_day_is_found_written_in_either_order() -> None:
    ctx = ContextText("[3 July 2023] Maria: my car was hit yesterday (yesterday: 2 July 2023)")
    assert ctx.contains("July 2, 2023") and ctx.contains("2nd of July 2023")
    assert ContextText("We met on February 24th, 2023.").contains("24 February 2023")
    assert not ctx.contains("July 4, 2023")  # another day
    assert not ContextText("on 12 July 2023").contains("July 2, 2023")  # whole words
    assert not ContextText("July 2023").contains("July 2, 2023")


def test_an_answer_is_found_in_the_plural_too() -> None:
    ctx = ContextText("Book club is now on Thursdays; two dogs and three boxes, one dog.")
    assert ctx.contains("Thursday") and ctx.contains("box") and ctx.contains("thursdays")
    assert [ctx.raw[a:b] for a, b in ctx.find("dog")] == ["dogs", "dog"]
    assert not ctx.contains("Thursda") and not ctx.contains("book clubs")
    assert not ContextText("the 1990s").contains("1990")  # a number takes no plural
    assert ctx.stale_as_current("Thursday", ["Tuesday"]) is False


def test_evidence_coverage_full_text_or_long_prefix() -> None:
    long_turn = "I finally booked the pottery course at Clayhouse Studio, six Thursdays in a row."
    ctx = ContextText(
        "memory: I finally booked the pottery course at Clayhouse Studio, six Thursdays…"
    )
    assert ctx.covers(long_turn)  # its first 60 normalised characters are there
    assert not ContextText("memory: I finally booked the pottery").covers(long_turn)
    assert ContextText("x: Short turn here. y").covers("short turn here")
    assert ctx.coverage([long_turn, "never said"]) == 0.5
    assert ctx.coverage([]) is None
    # A date the line restates inside a turn's text is the context's, not the turn's.
    restated = "- [8 May 2023] user: I finally booked [8 May 2023] the pottery course at Clayhouse"
    assert ContextText(restated + " Studio, six Thursdays in a row.").covers(long_turn)
    other = "- [8 May 2023] user: I finally booked [see notes] the pottery course at Clayhouse"
    assert not ContextText(other + " Studio, six Thursdays in a row.").covers(long_turn)


def test_date_mentions() -> None:
    text = "On 2023-08-11 and 2023/05/20, then 8 May, May 8th, 2023 and May 2023; you may go."
    found = [text[a:b] for a, b in date_mentions(text)]
    assert found == ["2023-08-11", "2023/05/20", "8 May", "May 8th, 2023", "May 2023"]


def test_stale_as_current_rule() -> None:
    pad = "x" * 250
    cases = {
        "the standup is on Monday": True,  # stale, no current
        "On 2024-03-01 the standup was Monday. Now it is Thursday.": False,  # dated stale
        "The standup was Monday. Now it is Thursday.": True,  # undated stale next to current
        f"On 2024-03-01 {pad} Monday. Since then: Thursday.": True,  # date too far before
        "standup on Thursday": False,  # no stale value at all
        "On 1 March 2024 it was on Monday, now Thursday.": False,  # "<day> <month> <year>"
    }
    for text, expected in cases.items():
        assert ContextText(text).stale_as_current("Thursday", ["Monday"]) is expected, text
    mornings = ContextText("volunteering: Saturday mornings")
    assert mornings.stale_as_current("Saturday mornings", ["Saturday"]) is False
    assert ContextText("anything").stale_as_current("Thursday", []) is None


# -- the naive baseline ------------------------------------------------------------------


async def test_naive_store_fills_the_budget_nearest_first(authored: Path) -> None:
    dialogue = load_dataset(authored).dialogues[0]
    counter = EstimatingTokenCounter()
    store = NaiveStore(HashingEmbedder(), counter)
    await store.add(dialogue)
    assert store.lines[0] == "[1 March 2024] user: Our team standup is on Monday mornings."
    everything = await store.context("What is my dog called?", 10_000)
    assert len(everything.splitlines()) == 8  # every turn
    small = await store.context("What is my dog called?", 25)
    assert counter.count(small) <= 25
    first, *rest = small.splitlines()
    assert first == "[1 March 2024] user: My dog is called Biscuit and he is a beagle."
    # What is left of the budget goes to the next turn, cut at a word boundary.
    assert len(rest) == 1 and rest[0] not in store.lines
    assert any(line.startswith(rest[0] + " ") for line in store.lines)
    assert counter.count(small) > counter.count(first)


# -- end to end --------------------------------------------------------------------------


@pytest.mark.usefixtures("eval_dsn")
def test_end_to_end_through_the_hooks(authored: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    result = CliRunner().invoke(
        app,
        ["eval", "conversations", "--data", str(authored), "--json", str(out),
         "--budget", "60", "--limit", "1", "--contexts", str(tmp_path / "contexts.jsonl")],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "conversations:" in result.output and "ours vs naive by question type" in result.output
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["suite"] == "conversations" and report["embedder"] == HYBRID_NAME
    metrics = report["metrics"]
    assert metrics["conversations"] == 1 and metrics["questions"] == 4
    assert metrics["turns_replayed"] == 8 and metrics["exchanges"] == 4
    assert metrics["consolidations"] == 2  # a new day for session 2, another for the questions
    assert metrics["session_end_calls"] == 2  # kernel.end_session after each session
    assert metrics["token_budget"] == 60
    for name in ("ours_answer_in_context", "naive_answer_in_context", "naive_stale_as_current"):
        assert 0.0 <= metrics[name] <= 1.0, name
    assert "naive_evidence_coverage" not in metrics  # the authored set names no evidence
    assert any(k.startswith("formed_episode_") for k in metrics)
    rows = {row["type"]: row for row in report["tables"]["ours vs naive by question type"]}
    assert list(rows) == [
        "knowledge-update", "single-session-user", "single-session-assistant", "abstention",
        "all",
    ]  # fmt: skip
    assert rows["abstention"]["answer ours"] is None and rows["all"]["n"] == 4
    assert {"stale ours", "stale naive", "tokens ours", "tokens naive"} <= set(rows["all"])
    details = {d["qid"]: d for d in report["details"]["questions"]}
    assert details["t01_q1"]["naive_answer"] is True  # "Biscuit" was said in a turn
    assert all(d["naive_tokens"] <= 60 for d in details.values())
    assert details["t01_q4"]["naive_answer"] is None
    dumped = [json.loads(line) for line in (tmp_path / "contexts.jsonl").read_text().splitlines()]
    assert [d["qid"] for d in dumped] == list(details)  # --contexts: every question, in order
    assert all(isinstance(d["ours"], str) and d["naive"] for d in dumped)
    assert dumped[0]["answer"] and "stale_answers" in dumped[0]


@pytest.mark.usefixtures("eval_dsn")
@pytest.mark.parametrize("extracts", [True, False])
async def test_the_replay_extracts_each_exchange_right_after_it(
    authored: Path, extracts: bool
) -> None:
    """With an extractor, the replay drains the queue after every exchange, at that
    exchange's clock time (the kernel's worker is off), so a run does not depend on when
    the worker's wall-clock poll came. Without the drain, nothing is extracted before a
    consolidation."""
    (dialogue, *_) = load_dataset(authored, limit=1).dialogues
    clock = FrozenClock(dialogue.sessions[0].date)
    config: dict[str, object] = {"extraction": {"worker": False}}
    async with eval_kernel(
        HashingEmbedder(), clock=clock, config=config, extractor=RuleExtractor()
    ) as kernel:
        replay = _Replay(kernel, clock, extracts=extracts)
        replay.start_agent()
        await replay.session("a", dialogue.sessions[0], lambda _: None)
        formed = await kernel.inspect("a", limit=1)
    facts = sum(c.count for c in formed.counts if str(c.kind) == "fact")
    assert (facts > 0) is extracts


def test_other_suites_refuse_the_conversation_options(dedup_pairs: Path) -> None:
    result = CliRunner().invoke(app, ["eval", "dedup", "--data", str(dedup_pairs), "--limit", "1"])
    assert result.exit_code == 1
    assert "takes no --limit" in result.output


def _extracting_model(request: Request) -> Reply:
    """A model that keeps each user turn of the batch as one fact, and reads the cap."""
    body = request.json()
    assert body["max_tokens"] == 300 and body["response_format"]["type"] == "json_schema"
    turns = json.loads(body["messages"][1]["content"])["turns"]
    facts = [{"turn": t["index"], "content": f"The user said: {t['text'][:200]}",
              "subject": None, "confidence": 0.9}
             for t in turns if t["role"] == "user"]  # fmt: skip
    return chat_reply(json.dumps({"facts": facts}))


@pytest.mark.usefixtures("eval_dsn")
def test_a_chat_extractor_on_a_real_endpoint_forms_the_facts(
    authored: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMORY_KERNEL_EXTRACTOR_MAX_TOKENS", "300")
    out = tmp_path / "report.json"
    with serve(_extracting_model) as server:
        result = CliRunner().invoke(
            app,
            ["eval", "conversations", "--data", str(authored), "--json", str(out),
             "--budget", "60", "--limit", "1", "--extractor", f"openai:m@{server.url}/v1"],
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        assert server.requests  # every exchange's user turn went to the model
    metrics = json.loads(out.read_text(encoding="utf-8"))["metrics"]
    assert metrics.get("formed_fact_active", 0) > 0
    bad = CliRunner().invoke(
        app, ["eval", "conversations", "--data", str(authored), "--extractor", "gpt-4o"]
    )
    assert bad.exit_code != 0 and "openai:<model>@<base_url>" in bad.output
