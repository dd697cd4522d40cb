"""The HTTP half shared by the OpenAI-compatible embedder, chat judge and chat extractor.

One place decides what is retried: transport errors, timeouts, HTTP 429 and 5xx, with
exponential backoff (tenacity); any other non-2xx answer fails at once, because repeating
a wrong request (bad key, unknown model) only repeats the answer. Failures surface as the
caller's own error type (``EmbedderError`` or ``JudgeError``), prefixed with its label.
"""

from __future__ import annotations

import re
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, Self

import pydantic
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential

from memory_kernel.errors import ConfigError, MemoryKernelError

if TYPE_CHECKING:
    import httpx

__all__ = [
    "FORMATS", "HTTPBacked", "OpenAICompatibleHTTP", "ResponseFormat", "chat_content",
    "chat_payload", "checked_chat_options", "checked_max_tokens", "cut_note",
]  # fmt: skip

_SNIPPET = 200
_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


#: How a chat client asks for its answer's shape: the JSON schema (which llama.cpp, vLLM and
#: Ollama constrain decoding to), any JSON object, or nothing (servers that refuse both).
ResponseFormat = Literal["json_schema", "json_object", "none"]
FORMATS: tuple[ResponseFormat, ...] = ("json_schema", "json_object", "none")


def checked_max_tokens(client: str, max_tokens: int | None) -> int | None:
    """A chat client's cap on its answer (``None``: none), or a ``ConfigError``."""
    if max_tokens is not None and max_tokens < 1:
        raise ConfigError(f"{client} needs max_tokens >= 1; got {max_tokens}")
    return max_tokens


def checked_chat_options(
    client: str, response_format: str, max_tokens: int | None
) -> tuple[ResponseFormat, int | None]:
    """``response_format`` and ``max_tokens`` of a chat client, or a ``ConfigError``."""
    chosen = next((f for f in FORMATS if f == response_format), None)
    if chosen is None:
        raise ConfigError(f"{client}: unknown response_format {response_format!r}")
    return chosen, checked_max_tokens(client, max_tokens)


def chat_payload(
    model: str, temperature: float, system: str, prompt: str, *,
    max_tokens: int | None = None, response_format: ResponseFormat = "none",
    schema: tuple[str, dict[str, Any], bool] | None = None,
) -> dict[str, Any]:  # fmt: skip
    """A ``/chat/completions`` request: one system and one user message; ``max_tokens``
    caps the answer (a small local model may otherwise write until its context is full);
    ``schema`` is ``(name, JSON schema, strict)`` for ``json_schema``."""
    payload: dict[str, Any] = {
        "model": model,
        "temperature": temperature,
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": prompt}],
    }
    if max_tokens is not None:
        payload["max_tokens"] = max_tokens
    if response_format == "json_object":
        payload["response_format"] = {"type": "json_object"}
    elif response_format == "json_schema":
        if schema is None:
            raise ValueError("response_format json_schema needs the answer's schema")
        name, body, strict = schema
        payload["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": name, "schema": body, **({"strict": True} if strict else {})},
        }
    return payload


class _Message(pydantic.BaseModel):
    content: str | None = None


class _Choice(pydantic.BaseModel):
    message: _Message
    finish_reason: str | None = None


class _Completion(pydantic.BaseModel):
    choices: list[_Choice] = pydantic.Field(min_length=1)


def chat_content(body: bytes) -> str | None:
    """The text of a ``/chat/completions`` answer (its first choice), without the
    ```json fences models like to add; ``None`` when the body is no completion."""
    try:
        content = _Completion.model_validate_json(body).choices[0].message.content or ""
    except pydantic.ValidationError:
        return None
    fenced = _FENCE.match(content)
    return fenced.group(1) if fenced else content


def cut_note(body: bytes) -> str:
    """What to add to an unreadable answer's error when the server cut it at its length
    limit (``finish_reason`` ``length``), else nothing."""
    try:
        reason = _Completion.model_validate_json(body).choices[0].finish_reason
    except pydantic.ValidationError:
        return ""
    return " (cut at the length limit: raise max_tokens)" if reason == "length" else ""


class _RetryableStatus(Exception):
    """A 429/5xx answer: the server may recover, so the request is tried again."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(f"HTTP {status} {reason}")
        self.status = status
        self.reason = reason


class OpenAICompatibleHTTP:
    """POSTs JSON to ``base_url`` + ``path`` with bearer auth, bounded attempts and
    exponential backoff (``backoff``: the first wait and the longest, in seconds). ``extra``
    names the client in errors."""

    def __init__(
        self,
        base_url: str,
        path: str,
        *,
        api_key: str | None,
        timeout: float,
        max_retries: int,
        backoff: tuple[float, float],
        error: type[MemoryKernelError],
        extra: str,
    ) -> None:
        if timeout <= 0 or max_retries < 0:
            raise ConfigError(
                f"{extra} needs timeout > 0 and max_retries >= 0; got timeout={timeout}, "
                f"max_retries={max_retries}"
            )
        try:
            import httpx
        except ImportError as exc:
            raise ConfigError(f"{extra} needs httpx: pip install 'memory-kernel[openai]'") from exc
        self.url = base_url.rstrip("/") + path
        self._httpx = httpx
        self._api_key = api_key
        self._timeout = timeout
        self._attempts = max_retries + 1
        self._wait_first, self._wait_max = backoff
        self._error = error
        # Created on first use so the client belongs to the event loop that uses it.
        self._client: httpx.AsyncClient | None = None

    async def post(self, payload: dict[str, Any], *, label: str) -> bytes:
        """The body of a 2xx answer; otherwise the caller's error type, naming ``label``."""
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self._attempts),
            wait=wait_exponential(multiplier=self._wait_first, max=self._wait_max),
            retry=retry_if_exception(self._is_retryable),
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    return await self._post_once(payload, label)
        except _RetryableStatus as exc:
            raise self._error(
                f"{label}: {self.url} answered HTTP {exc.status} {exc.reason} "
                f"after {self._attempts} attempts"
            ) from exc
        except self._httpx.TransportError as exc:
            kind = "timed out" if isinstance(exc, self._httpx.TimeoutException) else "failed"
            raise self._error(
                f"{label}: request to {self.url} {kind} after {self._attempts} attempts "
                f"({type(exc).__name__}: {exc})"
            ) from exc
        raise AssertionError("unreachable: tenacity either returns or re-raises")

    async def aclose(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.aclose()

    def _is_retryable(self, exc: BaseException) -> bool:
        return isinstance(exc, _RetryableStatus | self._httpx.TransportError)

    async def _post_once(self, payload: dict[str, Any], label: str) -> bytes:
        response = await self._get_client().post(self.url, json=payload)
        if response.is_success:
            return response.content
        status, reason = response.status_code, response.reason_phrase
        if status == 429 or status >= 500:
            raise _RetryableStatus(status, reason)
        raise self._error(
            f"{label}: {self.url} answered HTTP {status} {reason}: {response.text[:_SNIPPET]}"
        )

    def _get_client(self) -> httpx.AsyncClient:
        if self._client is None:
            headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
            self._client = self._httpx.AsyncClient(
                timeout=self._httpx.Timeout(self._timeout), headers=headers
            )
        return self._client


class HTTPBacked:
    """Closing, ``async with`` and a ``repr`` that never shows the API key, for the classes
    built on :class:`OpenAICompatibleHTTP` (each sets ``_http`` and ``_model``)."""

    _http: OpenAICompatibleHTTP
    _model: str

    def __repr__(self) -> str:
        return f"{type(self).__name__}(url={self._http.url!r}, model={self._model!r})"

    async def aclose(self) -> None:
        """Release the HTTP connections."""
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
