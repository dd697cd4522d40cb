"""An embedder that calls any OpenAI-compatible ``POST /embeddings`` endpoint.

Works with OpenAI itself and with local servers that copy its API (vLLM, llama.cpp,
Ollama, text-embeddings-inference, LiteLLM...). Needs ``httpx``:
``pip install 'memory-kernel[openai]'``.

Errors, decided once here so callers can rely on them:

* transport errors, timeouts, HTTP 429 and 5xx are retried with exponential backoff;
  when the retries are used up -> ``EmbedderError`` naming the last status/reason;
* any other non-2xx status (401, 404, 400...) -> ``EmbedderError`` at once, no retry;
* a body that is not the expected JSON (or the wrong number of items) -> ``EmbedderError``;
* well-formed JSON whose vectors have the wrong dimension or hold NaN/inf ->
  ``InvalidVectorError``, the same error ``embed_checked`` gives for any embedder.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Self

import numpy as np
import numpy.typing as npt
import pydantic
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential

from memory_kernel.embeddings.validation import validate_vectors
from memory_kernel.errors import ConfigError, EmbedderError

if TYPE_CHECKING:
    import httpx

__all__ = ["OpenAICompatibleEmbedder"]

FloatMatrix = npt.NDArray[np.float32]

# Backoff between attempts: 0.1 s, 0.2 s, 0.4 s... capped, so a flaky local server is
# ridden out quickly without stalling a caller for long.
_WAIT_FIRST = 0.1
_WAIT_MAX = 2.0
_BODY_SNIPPET = 200


class _Item(pydantic.BaseModel):
    index: int
    embedding: list[float]


class _Answer(pydantic.BaseModel):
    data: list[_Item]


class _RetryableStatusError(Exception):
    """A 429/5xx answer: the server may recover, so the request is tried again."""

    def __init__(self, status: int, reason: str, body: str) -> None:
        super().__init__(f"HTTP {status} {reason}: {body}")
        self.status = status
        self.reason = reason


class OpenAICompatibleEmbedder:
    """Embeds through ``{base_url}/embeddings`` with ``{"model": ..., "input": [...]}``.

    ``max_retries`` counts the extra attempts after the first one; ``timeout`` (seconds)
    bounds each HTTP attempt. Texts are sent in batches of ``batch_size``. Use it as an
    async context manager, or call ``aclose()``, to release connections.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        dim: int,
        api_key: str | None = None,
        timeout: float = 10.0,
        max_retries: int = 3,
        batch_size: int = 128,
    ) -> None:
        try:
            import httpx
        except ImportError as exc:
            raise ConfigError(
                "OpenAICompatibleEmbedder needs httpx: pip install 'memory-kernel[openai]'"
            ) from exc
        if dim < 1 or batch_size < 1 or max_retries < 0 or timeout <= 0:
            raise ConfigError(
                "OpenAICompatibleEmbedder needs dim >= 1, batch_size >= 1, "
                f"max_retries >= 0 and timeout > 0; got dim={dim}, batch_size={batch_size}, "
                f"max_retries={max_retries}, timeout={timeout}"
            )
        self._httpx = httpx
        self._url = base_url.rstrip("/") + "/embeddings"
        self._model = model
        self._dim = dim
        self._api_key = api_key
        self._timeout = timeout
        self._max_retries = max_retries
        self._batch_size = batch_size
        # Created on first use so the client belongs to the event loop that uses it.
        self._client: httpx.AsyncClient | None = None

    @property
    def name(self) -> str:
        return f"openai:{self._model}"

    @property
    def dim(self) -> int:
        return self._dim

    async def embed(self, texts: Sequence[str]) -> FloatMatrix:
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        parts = [
            await self._embed_batch(texts[i : i + self._batch_size])
            for i in range(0, len(texts), self._batch_size)
        ]
        return np.ascontiguousarray(np.concatenate(parts), dtype=np.float32)

    async def aclose(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        # Never show the API key.
        return f"OpenAICompatibleEmbedder(url={self._url!r}, model={self._model!r})"

    def _get_client(self) -> httpx.AsyncClient:
        if self._client is None:
            headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
            self._client = self._httpx.AsyncClient(
                timeout=self._httpx.Timeout(self._timeout), headers=headers
            )
        return self._client

    async def _embed_batch(self, batch: Sequence[str]) -> FloatMatrix:
        body = await self._post_with_retries(batch)
        return self._parse(body, len(batch))

    async def _post_with_retries(self, batch: Sequence[str]) -> bytes:
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self._max_retries + 1),
            wait=wait_exponential(multiplier=_WAIT_FIRST, max=_WAIT_MAX),
            retry=retry_if_exception(self._is_retryable),
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    return await self._post_once(batch)
        except _RetryableStatusError as exc:
            raise EmbedderError(
                f"embedder {self.name!r}: {self._url} answered HTTP {exc.status} "
                f"{exc.reason} after {self._max_retries + 1} attempts"
            ) from exc
        except self._httpx.TransportError as exc:
            kind = "timed out" if isinstance(exc, self._httpx.TimeoutException) else "failed"
            raise EmbedderError(
                f"embedder {self.name!r}: request to {self._url} {kind} after "
                f"{self._max_retries + 1} attempts ({type(exc).__name__}: {exc})"
            ) from exc
        raise AssertionError("unreachable: tenacity either returns or re-raises")

    def _is_retryable(self, exc: BaseException) -> bool:
        return isinstance(exc, _RetryableStatusError | self._httpx.TransportError)

    async def _post_once(self, batch: Sequence[str]) -> bytes:
        payload = {"model": self._model, "input": list(batch)}
        response = await self._get_client().post(self._url, json=payload)
        if response.is_success:
            return response.content
        status, reason = response.status_code, response.reason_phrase
        snippet = response.text[:_BODY_SNIPPET]
        if status == 429 or status >= 500:
            raise _RetryableStatusError(status, reason, snippet)
        # Other 4xx mean the request itself is wrong (bad key, unknown model): retrying
        # would only repeat the same answer.
        raise EmbedderError(
            f"embedder {self.name!r}: {self._url} answered HTTP {status} {reason}: {snippet}"
        )

    def _parse(self, body: bytes, count: int) -> FloatMatrix:
        try:
            answer = _Answer.model_validate_json(body)
        except pydantic.ValidationError as exc:
            raise EmbedderError(
                f"embedder {self.name!r}: malformed answer from {self._url}: "
                f"{exc.error_count()} error(s), first: {exc.errors()[0]['msg']}"
            ) from exc
        items = sorted(answer.data, key=lambda item: item.index)
        if [item.index for item in items] != list(range(count)):
            raise EmbedderError(
                f"embedder {self.name!r}: asked for {count} embeddings, got indices "
                f"{[item.index for item in items][:10]}"
            )
        # Ragged or wrong-length vectors raise InvalidVectorError here (see module doc).
        return validate_vectors([item.embedding for item in items], dim=self._dim, count=count)
