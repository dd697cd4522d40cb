"""OpenAICompatibleEmbedder against a real HTTP server on 127.0.0.1.

The server picks its behaviour from the first path segment, ``/<scenario>-<key>/embeddings``;
the key gives each test its own request counter. Decision tested here: a well-formed
answer with wrong-dimension vectors is an ``InvalidVectorError`` (as ``embed_checked``
reports for any embedder), a broken answer is an ``EmbedderError``.
"""

from __future__ import annotations

import hashlib
import json
import socket
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import numpy.typing as npt
import pytest

from memory_kernel.embeddings import OpenAICompatibleEmbedder, embed_checked
from memory_kernel.errors import ConfigError, EmbedderError, InvalidVectorError
from tests.extras import error_without

DIM = 8
SLOW_SECONDS = 0.8


def expected_vector(text: str, dim: int = DIM) -> npt.NDArray[np.float32]:
    """The vector the server gives ``text``: derived from its SHA-256, so checkable."""
    raw = np.frombuffer(hashlib.sha256(text.encode()).digest()[:dim], dtype=np.uint8)
    return ((raw.astype(np.float32) - 127.5) / 128.0).astype(np.float32)


class _State:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.hits: Counter[str] = Counter()
        self.batches: list[list[str]] = []


class _Handler(BaseHTTPRequestHandler):
    state: _State

    def log_message(self, format: str, *args: object) -> None:  # keep test output clean
        pass

    def do_POST(self) -> None:
        key, _, rest = self.path.lstrip("/").partition("/")
        if rest != "embeddings":
            self._send(404, b'{"error": "not found"}')
            return
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with self.state.lock:
            self.state.hits[key] += 1
            hit = self.state.hits[key]
            self.state.batches.append(body["input"])
        self._answer(key.split("-")[0], hit, body)

    def _answer(self, scenario: str, hit: int, body: dict[str, object]) -> None:
        texts = body["input"]
        assert isinstance(texts, list)
        if scenario == "flaky" and hit == 1:
            self._send(500, b"internal error")
        elif scenario == "ratelimited" and hit == 1:
            self._send(429, b"slow down")
        elif scenario == "down":
            self._send(503, b"maintenance")
        elif scenario == "unauthorized" or (
            scenario == "auth" and self.headers.get("Authorization") != "Bearer s3cret"
        ):
            self._send(401, b'{"error": "invalid api key"}')
        elif scenario == "malformed":
            self._send(200, b'{"data": [{"index": 0, "embedding": [0.1, ')
        elif scenario == "wrongshape":
            self._send(200, b'{"data": [{"idx": 0, "vector": [0.1]}]}')
        elif scenario == "short":
            self._send(200, _payload(texts[:-1], DIM))
        elif scenario == "wrongdim":
            self._send(200, _payload(texts, DIM + 3))
        elif scenario == "slow":
            time.sleep(SLOW_SECONDS)
            self._send(200, _payload(texts, DIM))
        else:
            self._send(200, _payload(texts, DIM))

    def _send(self, status: int, payload: bytes) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        except OSError:
            pass  # the client gave up (timeout test); nothing to answer


def _payload(texts: list[str], dim: int) -> bytes:
    items = [
        {"object": "embedding", "index": i, "embedding": expected_vector(t, dim).tolist()}
        for i, t in enumerate(texts)
    ]
    # Reversed on purpose: the client must order by "index", not by position.
    return json.dumps({"object": "list", "data": items[::-1], "model": "m"}).encode()


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, _State]]:
    state = _State()
    handler = type("Handler", (_Handler,), {"state": state})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def _key(scenario: str) -> str:
    return f"{scenario}-{uuid.uuid4().hex[:8]}"


def _embedder(root: str, key: str, **kwargs: object) -> OpenAICompatibleEmbedder:
    options: dict[str, object] = {"dim": DIM, "timeout": 2.0, "max_retries": 2}
    options.update(kwargs)
    return OpenAICompatibleEmbedder(f"{root}/{key}/", "test-model", **options)  # type: ignore[arg-type]


async def test_good_answer_in_order_and_batched(server: tuple[str, _State]) -> None:
    root, state = server
    key = _key("good")
    texts = [f"text number {i}" for i in range(5)]
    async with _embedder(root, key, batch_size=2) as emb:
        assert emb.name == "openai:test-model"
        out = await emb.embed(texts)
    assert out.dtype == np.float32
    assert out.shape == (5, DIM)
    assert np.array_equal(out, np.stack([expected_vector(t) for t in texts]))
    assert state.hits[key] == 3  # 2 + 2 + 1


async def test_api_key_is_sent_as_bearer(server: tuple[str, _State]) -> None:
    root, _ = server
    async with _embedder(root, _key("auth"), api_key="s3cret") as emb:
        assert (await emb.embed(["hi"])).shape == (1, DIM)
    assert "s3cret" not in repr(emb)


@pytest.mark.parametrize("scenario", ["flaky", "ratelimited"])
async def test_500_or_429_then_success_is_retried(
    server: tuple[str, _State], scenario: str
) -> None:
    root, state = server
    key = _key(scenario)
    async with _embedder(root, key) as emb:
        out = await emb.embed(["retry me"])
    assert np.array_equal(out[0], expected_vector("retry me"))
    assert state.hits[key] == 2


async def test_persistent_503_gives_embedder_error_after_retries(
    server: tuple[str, _State],
) -> None:
    root, state = server
    key = _key("down")
    async with _embedder(root, key, max_retries=2) as emb:
        with pytest.raises(EmbedderError, match=r"HTTP 503 Service Unavailable after 3 attempts"):
            await emb.embed(["x"])
    assert state.hits[key] == 3


async def test_401_is_not_retried(server: tuple[str, _State]) -> None:
    root, state = server
    key = _key("unauthorized")
    async with _embedder(root, key, max_retries=3) as emb:
        with pytest.raises(EmbedderError, match=r"HTTP 401 Unauthorized.*invalid api key"):
            await emb.embed(["x"])
    assert state.hits[key] == 1


@pytest.mark.parametrize(
    ("scenario", "match"),
    [
        ("malformed", "malformed answer"),
        ("wrongshape", "malformed answer"),
        ("short", "asked for 2"),
    ],
)
async def test_broken_answers_give_embedder_error(
    server: tuple[str, _State], scenario: str, match: str
) -> None:
    root, _ = server
    async with _embedder(root, _key(scenario)) as emb:
        with pytest.raises(EmbedderError, match=match):
            await emb.embed(["a", "b"])
        with pytest.raises(EmbedderError, match=match):
            await embed_checked(emb, ["a", "b"], timeout=5.0)


async def test_wrong_dimension_gives_invalid_vector_error(server: tuple[str, _State]) -> None:
    root, _ = server
    async with _embedder(root, _key("wrongdim")) as emb:
        with pytest.raises(InvalidVectorError, match=f"dimension {DIM}, got dimension {DIM + 3}"):
            await emb.embed(["a"])
        with pytest.raises(InvalidVectorError):
            await embed_checked(emb, ["a"], timeout=5.0)


async def test_slow_answer_times_out(server: tuple[str, _State]) -> None:
    root, state = server
    key = _key("slow")
    async with _embedder(root, key, timeout=0.2, max_retries=1) as emb:
        with pytest.raises(EmbedderError, match="timed out after 2 attempts"):
            await emb.embed(["a"])
    assert state.hits[key] == 2


async def test_unreachable_server_gives_embedder_error() -> None:
    with socket.socket() as sock:  # a port that nobody listens on any more
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    async with OpenAICompatibleEmbedder(
        f"http://127.0.0.1:{port}", "m", dim=DIM, max_retries=1
    ) as emb:
        with pytest.raises(EmbedderError, match="failed after 2 attempts"):
            await emb.embed(["a"])


async def test_empty_input_sends_nothing(server: tuple[str, _State]) -> None:
    root, state = server
    key = _key("good")
    async with _embedder(root, key) as emb:
        assert (await emb.embed([])).shape == (0, DIM)
    assert state.hits[key] == 0


async def test_aclose_is_idempotent_and_client_is_recreated(server: tuple[str, _State]) -> None:
    root, _ = server
    emb = _embedder(root, _key("good"))
    await emb.embed(["a"])
    await emb.aclose()
    await emb.aclose()
    assert (await emb.embed(["b"])).shape == (1, DIM)
    await emb.aclose()


@pytest.mark.parametrize(
    "kwargs", [{"dim": 0}, {"dim": 4, "batch_size": 0}, {"dim": 4, "timeout": 0}]
)
def test_rejects_bad_settings(kwargs: dict[str, float]) -> None:
    with pytest.raises(ConfigError):
        OpenAICompatibleEmbedder("http://127.0.0.1:1", "m", **kwargs)  # type: ignore[arg-type]


def test_missing_httpx_gives_config_error_with_install_hint() -> None:
    message = error_without(
        "httpx",
        "from memory_kernel.embeddings import OpenAICompatibleEmbedder",
        "OpenAICompatibleEmbedder('http://127.0.0.1:1', 'm', dim=4)",
    )
    assert "memory-kernel[openai]" in message
