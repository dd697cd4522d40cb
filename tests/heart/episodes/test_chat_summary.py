"""An episode summary written by a model: ``ChatSummariser`` against a real HTTP server on
127.0.0.1 that plays the model (the request it sends, answers it must refuse), and, end to
end on a real Postgres, ``end_session`` with it — the model's summary when it answers, cut
to ``episode_summary_chars``; the extractive summary when it is down, errs, hangs or answers
nothing usable, so the episode always ends."""

from __future__ import annotations

import json
import socket
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from datetime import UTC, datetime

import pytest

from memory_kernel import ChatSummariser, ConfigError, MemoryKernel, SummariserError
from memory_kernel.models.enums import AdmissionStatus
from memory_kernel.models.extraction import ExtractionTurn
from memory_kernel.models.turns import TurnInput, TurnOutcome
from memory_kernel.protocols import EpisodeSummariser
from memory_kernel.testing import FakeEmbedder, FrozenClock
from tests.conftest import schema_config
from tests.httpserver import Reply, Request, Server, chat_reply, json_reply, serve

AGENT = "agent-s"
SUMMARY = "The user's book club now meets on Thursday evenings at the Kentish Town library."


class Model:
    """The server's behaviour, switched by the test."""

    def __init__(self) -> None:
        self.mode = "good"

    def __call__(self, request: Request) -> Reply:
        answers = {
            "good": chat_reply(f"  {SUMMARY}\n"),
            "long": chat_reply("The user plans " + "a very long trip " * 60),
            "blank": chat_reply("   \n "),
            "nul": chat_reply("The user\x00 said this."),
            "malformed": json_reply({"nothing": "here"}),
            "error": Reply(500, b"oops"),
            "slow": Reply(body=json.dumps({"choices": []}).encode(), delay_s=3.0),
        }
        return answers.get(self.mode, Reply(404, b"unknown mode"))


@pytest.fixture
def model() -> Model:
    return Model()


@pytest.fixture
def server(model: Model) -> Iterator[Server]:
    with serve(model) as running:
        yield running


def _turns() -> list[ExtractionTurn]:
    said = ["Our book club meets on Tuesdays.", "Noted.", "It moved to Thursdays now."]
    return [
        ExtractionTurn(
            agent_id=AGENT,
            session_id="s1",
            turn_id=uuid.UUID(int=i + 1),
            episode_id=None,
            role="user" if i % 2 == 0 else "assistant",
            text=text,
            said_at=datetime(2026, 1, 1, 12, i, tzinfo=UTC),
        )
        for i, text in enumerate(said)
    ]


async def test_the_request_and_the_answer(server: Server) -> None:
    async with ChatSummariser(server.url + "/v1", "sum-model", api_key="s3cret") as summariser:
        assert isinstance(summariser, EpisodeSummariser) and summariser.name == "chat:sum-model"
        assert "s3cret" not in repr(summariser)
        assert await summariser.summarise(_turns(), max_chars=300) == SUMMARY
    (sent,) = server.requests
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["Authorization"] == "Bearer s3cret"
    body = sent.json()
    assert body["model"] == "sum-model" and body["temperature"] == 0.0
    assert "max_tokens" not in body and "response_format" not in body
    system, user = body["messages"]
    assert "300 characters" in " ".join(system["content"].split())
    prompt = json.loads(user["content"])
    assert [t["text"] for t in prompt["turns"]][2] == "It moved to Thursdays now."
    assert [t["role"] for t in prompt["turns"]] == ["user", "assistant", "user"]


@pytest.mark.parametrize("mode", ["blank", "malformed", "error"])
async def test_unusable_answers_are_summariser_errors(
    server: Server, model: Model, mode: str
) -> None:
    model.mode = mode
    async with ChatSummariser(server.url, "m", timeout=2.0, max_retries=0) as summariser:
        with pytest.raises(SummariserError):
            await summariser.summarise(_turns(), max_chars=300)


async def test_an_endpoint_that_is_down_is_a_summariser_error() -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    async with ChatSummariser(f"http://127.0.0.1:{port}", "m", max_retries=0) as summariser:
        with pytest.raises(SummariserError):
            await summariser.summarise(_turns(), max_chars=300)


async def test_max_tokens_caps_the_answer(server: Server) -> None:
    async with ChatSummariser(server.url, "m", max_tokens=120) as summariser:
        assert await summariser.summarise(_turns(), max_chars=300) == SUMMARY
    assert server.requests[-1].json()["max_tokens"] == 120


def test_bad_settings_are_config_errors() -> None:
    with pytest.raises(ConfigError):
        ChatSummariser("http://127.0.0.1:1", "m", max_tokens=0)
    with pytest.raises(ConfigError):
        ChatSummariser("http://127.0.0.1:1", "m", max_turn_chars=0)
    with pytest.raises(ConfigError):
        ChatSummariser("http://127.0.0.1:1", "m", timeout=0)


# -- end to end: end_session with a summariser ---------------------------------------------


class Raising:
    """A summariser plug-in that breaks in its own way (not through HTTP)."""

    name = "raising"

    async def summarise(self, turns: Sequence[ExtractionTurn], *, max_chars: int) -> str:
        raise RuntimeError("the plug-in broke")


@pytest.fixture
async def skernel(
    pg_dsn: str, drop_schema: str, clock: FrozenClock, embedder: FakeEmbedder, server: Server
) -> AsyncIterator[MemoryKernel]:
    config = schema_config(
        drop_schema, heart={"episode_summariser_timeout_s": 1.0, "episode_summary_chars": 120}
    )
    summariser = ChatSummariser(server.url, "sum-model", timeout=5.0, max_retries=0)
    async with (
        summariser,
        MemoryKernel.open(
            pg_dsn, config=config, clock=clock, embedder=embedder, summariser=summariser
        ) as opened,
    ):
        yield opened


async def _session(kernel: MemoryKernel, session: str) -> str:
    """A session about the book club; its episode's summary once ended."""
    for message in (
        "Our book club meets on Tuesday evenings at the Kentish Town library.",
        "Update: the library closed on Tuesdays, so the book club meets on Thursdays now.",
    ):
        ctx = await kernel.pre_turn(TurnInput(agent_id=AGENT, session_id=session, message=message))
        await kernel.post_turn(ctx.turn, TurnOutcome(response_text="Noted, thanks."))
    (ended,) = await kernel.end_session(AGENT, session)
    assert ended.episode.status.value == "completed"
    return ended.episode.summary


async def test_end_session_uses_the_models_summary(skernel: MemoryKernel, server: Server) -> None:
    summary = await _session(skernel, "s1")
    assert summary == SUMMARY
    prompt = json.loads(server.requests[0].json()["messages"][1]["content"])
    assert len(prompt["turns"]) == 4  # both exchanges, user and assistant
    (hit,) = await skernel.heart.episodes.search(AGENT, "book club Thursdays")
    assert hit.episode.summary == SUMMARY
    assert hit.episode.admission is AdmissionStatus.ACTIVE


@pytest.mark.parametrize("mode", ["error", "blank", "nul", "malformed", "slow"])
async def test_a_failing_summariser_leaves_the_extractive_summary(
    skernel: MemoryKernel, model: Model, mode: str
) -> None:
    model.mode = mode
    summary = await _session(skernel, "s1")
    assert "Thursdays" in summary and "\x00" not in summary
    assert "meets on Tuesday evenings" not in summary  # the newer statement replaced it


async def test_a_plug_in_that_raises_leaves_the_extractive_summary(
    pg_dsn: str, drop_schema: str, clock: FrozenClock, embedder: FakeEmbedder
) -> None:
    async with MemoryKernel.open(
        pg_dsn, config=schema_config(drop_schema), clock=clock, embedder=embedder,
        summariser=Raising(),
    ) as kernel:  # fmt: skip
        assert "Thursdays" in await _session(kernel, "s2")


async def test_the_long_answer_is_cut(skernel: MemoryKernel, model: Model) -> None:
    model.mode = "long"
    summary = await _session(skernel, "s1")
    # Cut to episode_summary_chars at a word boundary.
    assert len(summary) <= 120 and summary.endswith(" a…") and summary.startswith("The user")
