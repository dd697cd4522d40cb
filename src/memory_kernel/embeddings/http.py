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

import numpy as np
import pydantic

from memory_kernel._openai_http import HTTPBacked, OpenAICompatibleHTTP
from memory_kernel.embeddings.validation import validate_vectors
from memory_kernel.errors import ConfigError, EmbedderError
from memory_kernel.vectors import FloatMatrix

__all__ = ["OpenAICompatibleEmbedder"]


# Backoff between attempts: 0.1 s, 0.2 s, 0.4 s... capped, so a flaky local server is
# ridden out quickly without stalling a caller for long.
_BACKOFF = (0.1, 2.0)


class _Item(pydantic.BaseModel):
    index: int
    embedding: list[float]


class _Answer(pydantic.BaseModel):
    data: list[_Item]


class OpenAICompatibleEmbedder(HTTPBacked):
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
        if dim < 1 or batch_size < 1:
            raise ConfigError(
                "OpenAICompatibleEmbedder needs dim >= 1 and batch_size >= 1; got "
                f"dim={dim}, batch_size={batch_size}"
            )
        self._http = OpenAICompatibleHTTP(
            base_url, "/embeddings", api_key=api_key, timeout=timeout, max_retries=max_retries,
            backoff=_BACKOFF, error=EmbedderError, extra="OpenAICompatibleEmbedder",
        )  # fmt: skip
        self._url = self._http.url
        self._model = model
        self._dim = dim
        self._batch_size = batch_size

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

    async def _embed_batch(self, batch: Sequence[str]) -> FloatMatrix:
        payload = {"model": self._model, "input": list(batch)}
        body = await self._http.post(payload, label=f"embedder {self.name!r}")
        return self._parse(body, len(batch))

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
