"""ChatExtractor against a real HTTP server on 127.0.0.1 that plays the model: the request it
sends, batching with indexed turns, answers it must refuse; and, end to end on a real
Postgres, a kernel whose endpoint is down, errs or talks garbage keeps the turns queued and
learns their facts once the endpoint is back — once, with provenance."""

from __future__ import annotations

import json
import re
import socket
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import select

from memory_kernel import ChatExtractor, ConfigError, ExtractorError, MemoryKernel
from memory_kernel.models.extraction import ExtractionTurn
from memory_kernel.models.facts import PREFERENCE
from memory_kernel.models.turns import TurnInput, TurnOutcome
from memory_kernel.protocols import FactExtractor
from memory_kernel.storage.tables import facts, turns
from memory_kernel.testing import FakeEmbedder, FrozenClock
from tests.heart.extraction.conftest import queue_config, queue_rows
from tests.httpserver import Reply, Request, Server, chat_reply, serve

AGENT = "agent-c"
_SLOT = re.compile(r"\bmy ([a-z][a-z ]{0,40}?) is ([^.,;!?\n]+)", re.IGNORECASE)


def _model_answer(request: Request) -> dict[str, Any]:
    """What a well-behaved model answers: each "my X is Y" of a user turn, by turn index."""
    prompt = json.loads(request.json()["messages"][1]["content"])
    found = []
    for turn in prompt["turns"]:
        if turn["role"] != "user":
            continue
        for slot, value in _SLOT.findall(turn["text"]):
            found.append(
                {
                    "turn": turn["index"],
                    "content": f"The user's {slot.lower()} is {value.strip()}.",
                    "subject": f"user {slot.lower()}",
                    "confidence": 0.9,
                }
            )
    return {"facts": found}


class Model:
    """The server's behaviour, switched by the test."""

    def __init__(self) -> None:
        self.mode = "good"

    def __call__(self, request: Request) -> Reply:
        if self.mode == "good":
            return chat_reply(json.dumps(_model_answer(request)))
        if self.mode == "fenced":
            return chat_reply("```json\n" + json.dumps(_model_answer(request)) + "\n```")
        if self.mode == "error":
            return Reply(500, b"oops")
        if self.mode == "prose":
            return chat_reply("The user lives in Paris, I think.")
        if self.mode == "cut":  # stopped at max_tokens halfway through the JSON
            body = {
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "length",
                        "message": {
                            "role": "assistant",
                            "content": json.dumps(_model_answer(request))[:20],
                        },
                    }
                ]
            }
            return Reply(200, json.dumps(body).encode())
        if self.mode == "wrong-turn":
            return chat_reply(json.dumps({"facts": [{"turn": 99, "content": "x"}]}))
        if self.mode == "preference":
            fact = {"turn": 0, "content": "The user wants code in TypeScript.", "subject": None,
                    "confidence": 0.8, "preference": True}  # fmt: skip
            return chat_reply(json.dumps({"facts": [fact, *_model_answer(request)["facts"]]}))
        if self.mode == "one-bad-fact":
            answer = _model_answer(request)
            answer["facts"].append({"turn": 0, "content": "", "subject": None, "confidence": 2})
            return chat_reply(json.dumps(answer))
        return Reply(404, b"unknown mode")


@pytest.fixture
def model() -> Model:
    return Model()


@pytest.fixture
def server(model: Model) -> Iterator[Server]:
    with serve(model) as running:
        yield running


def _extractor(url: str, **options: Any) -> ChatExtractor:
    settings: dict[str, Any] = {"timeout": 2.0, "max_retries": 1}
    settings.update(options)
    return ChatExtractor(url + "/v1", "extract-model", **settings)


def _turn(i: int, text: str, role: str = "user") -> ExtractionTurn:
    return ExtractionTurn(
        agent_id=AGENT,
        session_id="s1",
        turn_id=uuid.UUID(int=i + 1),
        episode_id=None,
        role=role,
        text=text,
        said_at=datetime(2026, 1, 1, 12, i, tzinfo=UTC),
    )


async def test_one_request_per_batch_and_facts_back_to_their_turns(server: Server) -> None:
    batch = [
        _turn(0, "Hi there."),
        _turn(1, "My city is Paris.", "user"),
        _turn(2, "My city is London, said nobody.", "assistant"),
        _turn(3, "My dog is Rex. My job is pilot."),
    ]
    async with _extractor(server.url, api_key="s3cret") as extractor:
        assert isinstance(extractor, FactExtractor) and extractor.name == "chat:extract-model"
        found = await extractor.extract(batch)
        assert "s3cret" not in repr(extractor)
    assert [[f.content for f in facts] for facts in found] == [
        [],
        ["The user's city is Paris."],
        [],
        ["The user's dog is Rex.", "The user's job is pilot."],
    ]
    assert found[1][0].subject == "user city" and found[1][0].confidence == 0.9
    (sent,) = server.requests
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["Authorization"] == "Bearer s3cret"
    body = sent.json()
    assert body["model"] == "extract-model" and body["temperature"] == 0.0
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["strict"] is True
    prompt = json.loads(body["messages"][1]["content"])
    assert [t["index"] for t in prompt["turns"]] == [0, 1, 2, 3]
    assert prompt["turns"][2] == {
        "index": 2,
        "role": "assistant",
        "said_at": "2026-01-01T12:02:00+00:00",
        "session": "s1",
        "text": "My city is London, said nobody.",
    }


async def test_a_preference_the_model_marks_gets_the_preference_category(
    server: Server, model: Model
) -> None:
    model.mode = "preference"
    async with _extractor(server.url) as extractor:
        (found,) = await extractor.extract([_turn(0, "My city is Paris. Code in TypeScript.")])
    # An answer without the flag (an older prompt, a lax model) is no preference.
    assert {f.content: f.category for f in found} == {
        "The user wants code in TypeScript.": PREFERENCE,
        "The user's city is Paris.": None,
    }
    schema = server.requests[-1].json()["response_format"]["json_schema"]["schema"]
    assert "preference" in schema["properties"]["facts"]["items"]["required"]


async def test_json_object_mode_and_fenced_answers(server: Server, model: Model) -> None:
    model.mode = "fenced"
    async with _extractor(server.url, response_format="json_object") as extractor:
        (found,) = await extractor.extract([_turn(0, "My city is Paris.")])
    assert [f.content for f in found] == ["The user's city is Paris."]
    assert server.requests[-1].json()["response_format"] == {"type": "json_object"}
    assert "max_tokens" not in server.requests[-1].json()
    async with _extractor(server.url, response_format="none", max_tokens=300) as extractor:
        await extractor.extract([_turn(0, "My city is Paris.")])
    assert "response_format" not in server.requests[-1].json()
    assert server.requests[-1].json()["max_tokens"] == 300


@pytest.mark.parametrize(
    ("mode", "says"),
    [("error", "500"), ("prose", "does not fit"), ("wrong-turn", "names turn 99"),
     ("cut", "cut at the length limit: raise max_tokens")],
)  # fmt: skip
async def test_unusable_answers_are_extractor_errors(
    server: Server, model: Model, mode: str, says: str
) -> None:
    model.mode = mode
    async with _extractor(server.url) as extractor:
        with pytest.raises(ExtractorError, match=re.escape(says)):
            await extractor.extract([_turn(0, "My city is Paris.")])
    assert len(server.requests) == (2 if mode == "error" else 1)  # 5xx retried once


async def test_a_fact_the_kernel_cannot_take_is_left_out(server: Server, model: Model) -> None:
    model.mode = "one-bad-fact"
    async with _extractor(server.url) as extractor:
        (found,) = await extractor.extract([_turn(0, "My city is Paris.")])
    assert [f.content for f in found] == ["The user's city is Paris."]


async def test_an_endpoint_that_is_down_is_an_extractor_error() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    async with _extractor(f"http://127.0.0.1:{port}", max_retries=0) as extractor:
        with pytest.raises(ExtractorError, match="failed after 1 attempts"):
            await extractor.extract([_turn(0, "My city is Paris.")])


def test_bad_settings_are_config_errors() -> None:
    with pytest.raises(ConfigError):
        ChatExtractor("http://x", "m", timeout=0)
    with pytest.raises(ConfigError):
        ChatExtractor("http://x", "m", response_format="yaml")  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        ChatExtractor("http://x", "m", max_tokens=0)


async def test_the_kernel_keeps_turns_while_the_endpoint_fails_and_learns_them_once(
    server: Server, model: Model, pg_dsn: str, drop_schema: str
) -> None:
    clock = FrozenClock()
    config = queue_config(drop_schema, batch_size=8)
    async with (
        _extractor(server.url, max_retries=0) as extractor,
        MemoryKernel.open(
            pg_dsn, config=config, clock=clock, embedder=FakeEmbedder(), extractor=extractor
        ) as kernel,
    ):
        for i, text in enumerate(["My city is Paris.", "Nice weather.", "My job is pilot."]):
            ctx = await kernel.pre_turn(TurnInput(agent_id=AGENT, session_id="s1", message=text))
            clock.advance(seconds=1)
            await kernel.post_turn(ctx.turn, TurnOutcome(response_text=f"Reply {i}."))
        # Each failure keeps every turn; the failed batch is retried in halves (8 -> 4 -> 2).
        for mode, failed in (("error", 6), ("prose", 4), ("wrong-turn", 2)):
            model.mode = mode
            report = await kernel.extract_pending()
            assert (report.turns, report.failed) == (0, failed), mode
            clock.advance(hours=2)  # past the backoff
        rows = await queue_rows(kernel)
        assert sorted(r.attempts for r in rows) == [1, 1, 2, 2, 3, 3]
        model.mode = "good"
        server.requests.clear()
        report = await kernel.extract_pending()
        assert report.turns == 6 and report.facts == {"added": 2}
        sent = [json.loads(r.json()["messages"][1]["content"])["turns"] for r in server.requests]
        assert [len(b) for b in sent] == [1, 1, 2, 2]  # oldest first, as they failed
        assert [t["text"] for b in sent for t in b][:3] == [
            "My city is Paris.",
            "Reply 0.",
            "Nice weather.",
        ]
        assert await queue_rows(kernel) == []
        assert (await kernel.extract_pending()).turns == 0
        async with kernel.database.connection() as conn:
            learned = (
                await conn.execute(
                    select(facts.c.content, facts.c.metadata, turns.c.content.label("said"))
                    .join(
                        turns,
                        turns.c.id == facts.c.metadata["turn_id"].astext.cast(turns.c.id.type),
                    )
                    .where(facts.c.agent_id == AGENT)
                    .order_by(facts.c.content)
                )
            ).all()
    assert [(r.content, r.said) for r in learned] == [
        ("The user's city is Paris.", "My city is Paris."),
        ("The user's job is pilot.", "My job is pilot."),
    ]
    assert {r.metadata["extractor"] for r in learned} == {"chat:extract-model"}
