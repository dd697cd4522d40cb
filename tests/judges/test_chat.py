"""ChatJudge against a real HTTP server on 127.0.0.1 that answers well, badly and slowly;
and, end to end on a real Postgres, the kernel falling back to the rules when it does.

The server picks its behaviour from the first path segment, ``/<scenario>-<key>/...``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pydantic
import pytest

from memory_kernel import ConfigError, JudgeError, MemoryKernel
from memory_kernel.eval.embedders import judge_from_name
from memory_kernel.judges import (
    AdmissionCandidate,
    AdmissionRequest,
    AdmissionRun,
    AdmissionVerdict,
    ChatJudge,
    Judge,
)
from memory_kernel.models.enums import DecidedBy
from memory_kernel.models.episodes import AdmissionDecision, EpisodeEnd
from memory_kernel.testing import FakeEmbedder, FrozenClock
from tests.conftest import schema_config
from tests.extras import error_without
from tests.heart.episodes.conftest import admission_event, run
from tests.httpserver import Reply, Request, Server, json_reply, serve

SLOW_S = 1.0
OLD = uuid.UUID(int=1)


def _completion(content: str, finish_reason: str = "stop") -> Reply:
    return json_reply(
        {
            "id": "c1",
            "object": "chat.completion",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": finish_reason,
                }
            ],
        }
    )


def _verdict_for(request: Request, target: str | None = None) -> str:
    prompt = json.loads(request.json()["messages"][1]["content"])
    run_id = target or prompt["similar_runs"][0]["run_id"]
    return json.dumps({"decision": "merge", "target_run_id": run_id, "reason": "complementary"})


def _respond(request: Request) -> Reply:
    scenario = request.key.split("-")[0]
    if scenario == "good":
        return _completion(_verdict_for(request))
    if scenario == "fenced":
        return _completion("```json\n" + _verdict_for(request) + "\n```")
    if scenario == "cut":  # stopped at max_tokens halfway through the JSON
        return _completion(_verdict_for(request)[:30], finish_reason="length")
    if scenario == "prose":
        return _completion("Sure! I would MERGE these two runs.")
    if scenario == "brokenbody":
        return Reply(200, b'{"choices": [{"message": ')
    if scenario == "stranger":
        return _completion(_verdict_for(request, target=str(uuid.UUID(int=99))))
    if scenario == "flaky" and request.hit == 1:
        return Reply(500, b"oops")
    if scenario == "flaky":
        return _completion(_verdict_for(request))
    if scenario == "down":
        return Reply(503, b"maintenance")
    if scenario == "unauthorized":
        return Reply(401, b'{"error": "invalid api key"}')
    if scenario == "slow":
        return Reply(200, b"{}", delay_s=SLOW_S)
    if scenario == "mixed":  # complete_json: the item that says "bad" gets garbage
        content = request.json()["messages"][1]["content"]
        return _completion("nope" if "bad" in content else json.dumps({"n": len(content)}))
    return Reply(404, b"unknown scenario")


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with serve(_respond) as running:
        yield running


def _judge(server: Server, scenario: str, **kwargs: object) -> ChatJudge:
    options: dict[str, object] = {"timeout": 2.0, "max_retries": 1}
    options.update(kwargs)
    key = f"{scenario}-{uuid.uuid4().hex[:8]}"
    return ChatJudge(f"{server.url}/{key}/", "judge-model", **options)  # type: ignore[arg-type]


def _request() -> AdmissionRequest:
    run = AdmissionRun(
        id=uuid.UUID(int=2), summary="Generate schema", outcome="success", references=("B",)
    )
    cand = AdmissionCandidate(
        id=OLD, summary="Generate schema", outcome="success", references=("A",), similarity=0.93
    )
    return AdmissionRequest(agent_id="a", run=run, candidates=(cand,))


async def test_good_answer_and_request_shape(server: Server) -> None:
    async with _judge(server, "good", api_key="s3cret") as judge:
        assert isinstance(judge, Judge) and judge.name == "chat:judge-model"
        (verdict,) = await judge.admit([_request()])
    assert isinstance(verdict, AdmissionVerdict)
    assert verdict.decision is AdmissionDecision.MERGE and verdict.target_run_id == OLD
    sent = server.requests[-1]
    assert sent.path.endswith("/chat/completions")
    assert sent.headers["Authorization"] == "Bearer s3cret"
    body = sent.json()
    assert body["model"] == "judge-model" and body["temperature"] == 0.0
    assert body["response_format"] == {"type": "json_object"} and "max_tokens" not in body
    assert "ADD|NOT|REPLACE|MERGE" in body["messages"][0]["content"]
    prompt = json.loads(body["messages"][1]["content"])
    assert prompt["new_run"]["references"] == {"count": 1, "items": ["B"]}
    assert prompt["similar_runs"][0]["run_id"] == str(OLD)
    assert "s3cret" not in repr(judge)


async def test_fenced_json_is_accepted(server: Server) -> None:
    async with _judge(server, "fenced", response_format="none") as judge:
        (verdict,) = await judge.admit([_request()])
    assert isinstance(verdict, AdmissionVerdict)
    assert "response_format" not in server.requests[-1].json()


@pytest.mark.parametrize(
    ("scenario", "match"),
    [
        ("prose", "does not fit AdmissionVerdict"),
        ("cut", "cut at the length limit: raise max_tokens"),
        ("brokenbody", "malformed completion"),
        ("down", "HTTP 503 Service Unavailable after 2 attempts"),
        ("unauthorized", "HTTP 401 Unauthorized"),
    ],
)
async def test_bad_answers_are_judge_errors_in_their_slot(
    server: Server, scenario: str, match: str
) -> None:
    async with _judge(server, scenario) as judge:
        (answer,) = await judge.admit([_request()])
    assert isinstance(answer, JudgeError)
    assert match in str(answer)


async def test_401_is_not_retried_and_500_is(server: Server) -> None:
    async with _judge(server, "unauthorized", max_retries=3) as judge:
        await judge.admit([_request()])
    assert server.hits_of(server.requests[-1].key) == 1
    async with _judge(server, "flaky") as judge:
        (verdict,) = await judge.admit([_request()])
    assert isinstance(verdict, AdmissionVerdict)
    assert server.hits_of(server.requests[-1].key) == 2


async def test_slow_answer_times_out(server: Server) -> None:
    async with _judge(server, "slow", timeout=0.2, max_retries=0) as judge:
        (answer,) = await judge.admit([_request()])
    assert isinstance(answer, JudgeError)
    assert "timed out after 1 attempts" in str(answer)


class _Size(pydantic.BaseModel):
    n: int


async def test_complete_json_is_batched_and_fails_item_by_item(server: Server) -> None:
    async with _judge(server, "mixed", max_concurrency=2) as judge:
        answers = await judge.complete_json("count", ["good one", "bad one", "fine"], _Size)
    assert isinstance(answers[0], _Size) and answers[0].n == len("good one")
    assert isinstance(answers[1], JudgeError)
    assert isinstance(answers[2], _Size) and answers[2].n == len("fine")


async def test_json_schema_sends_the_answers_schema(server: Server) -> None:
    async with _judge(server, "mixed", response_format="json_schema", max_tokens=64) as judge:
        (answer,) = await judge.complete_json("count", ["four"], _Size)
    assert isinstance(answer, _Size) and answer.n == len("four")
    assert server.requests[-1].json()["max_tokens"] == 64
    sent = server.requests[-1].json()["response_format"]
    assert sent["type"] == "json_schema" and sent["json_schema"]["name"] == "_Size"
    assert sent["json_schema"]["schema"]["required"] == ["n"]


async def test_the_command_lines_judge_takes_its_settings_from_the_environment(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMORY_KERNEL_JUDGE_API_KEY", "k3y")
    monkeypatch.setenv("MEMORY_KERNEL_JUDGE_RESPONSE_FORMAT", "json_schema")
    monkeypatch.setenv("MEMORY_KERNEL_JUDGE_MAX_TOKENS", "80")
    key = f"mixed-{uuid.uuid4().hex[:8]}"
    async with judge_from_name(f"openai:m@{server.url}/{key}/") as judge:
        (answer,) = await judge.complete_json("count", ["four"], _Size)
    assert isinstance(answer, _Size)
    sent = server.requests[-1]
    assert sent.headers["Authorization"] == "Bearer k3y"
    assert sent.json()["max_tokens"] == 80
    assert sent.json()["response_format"]["type"] == "json_schema"
    for name, value in (("MAX_TOKENS", "many"), ("RESPONSE_FORMAT", "xml")):
        monkeypatch.setenv(f"MEMORY_KERNEL_JUDGE_{name}", value)
        with pytest.raises(ConfigError, match=value):
            judge_from_name("openai:m@http://127.0.0.1:1")
        monkeypatch.delenv(f"MEMORY_KERNEL_JUDGE_{name}")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"timeout": 0},
        {"max_retries": -1},
        {"max_concurrency": 0},
        {"response_format": "xml"},
        {"max_tokens": 0},
    ],
)
def test_rejects_bad_settings(kwargs: dict[str, float]) -> None:
    with pytest.raises(ConfigError):
        ChatJudge("http://127.0.0.1:1", "m", **kwargs)  # type: ignore[arg-type]


def test_missing_httpx_gives_config_error_with_install_hint() -> None:
    message = error_without(
        "httpx",
        "from memory_kernel.judges import ChatJudge",
        "ChatJudge('http://127.0.0.1:1', 'm')",
    )
    assert "memory-kernel[openai]" in message


# -- end to end: the kernel with a ChatJudge ------------------------------------------------


Ends = tuple[EpisodeEnd, EpisodeEnd, dict[str, Any]]


async def _two_successes(pg_dsn: str, schema: str, judge: ChatJudge) -> Ends:
    """Two successes of one task with different references (the rules say MERGE); returns
    both ends and the second one's admission event."""
    async with MemoryKernel.open(
        pg_dsn,
        config=schema_config(schema),
        clock=FrozenClock(),
        embedder=FakeEmbedder(),
        judge=judge,
    ) as kernel:
        ends = [
            await run(kernel, "success", summary="Generate schema for orders", references=refs)
            for refs in (["A"], ["B"])
        ]
        event = await admission_event(kernel, ends[1].episode.id)
    await judge.aclose()
    return ends[0], ends[1], event


async def test_kernel_uses_the_chat_judges_decision(
    server: Server, pg_dsn: str, drop_schema: str
) -> None:
    first, second, event = await _two_successes(pg_dsn, drop_schema, _judge(server, "good"))
    assert second.decision is AdmissionDecision.MERGE
    assert second.decided_by is DecidedBy.JUDGE and second.reason == "complementary"
    assert second.target_id == first.episode.id
    assert event["decided_by"] == "judge" and event["details"]["judge"] == "chat:judge-model"


@pytest.mark.parametrize(
    ("scenario", "error"),
    [
        ("prose", "does not fit AdmissionVerdict"),
        ("stranger", "is not one of the candidates"),
        ("down", "HTTP 503"),
        ("slow", "timed out"),
    ],
)
async def test_kernel_falls_back_to_rules_when_the_chat_judge_fails(
    server: Server, pg_dsn: str, drop_schema: str, scenario: str, error: str
) -> None:
    judge = _judge(server, scenario, timeout=0.3, max_retries=0)
    _, second, event = await _two_successes(pg_dsn, drop_schema, judge)
    assert second.decision is AdmissionDecision.MERGE  # what the rules say
    assert second.decided_by is DecidedBy.RULE
    assert second.judge_error is not None and error in second.judge_error
    assert "judge 'chat:judge-model'" in second.judge_error
    assert event["decided_by"] == "rule"
    assert event["details"]["stage"] == "rules"
    assert error in event["details"]["judge_error"]
