"""``ChatSummariser``: an ended episode's summary written by any OpenAI-compatible
``POST /chat/completions`` (OpenAI, vLLM, llama.cpp, Ollama, LiteLLM...).

Needs ``httpx``: ``pip install 'memory-kernel[openai]'``. The HTTP client, its timeouts and
its retries are the judge's and the extractor's (``_openai_http``). The episode's turns go in
as JSON (``heart.extraction.chat.extraction_prompt``: their texts cannot break the prompt),
the answer is plain text. An answer that is no completion or has no words is a
``SummariserError``; the kernel then ends the episode with its extractive summary
(``heart.episodes.sessions``), and it cuts an answer longer than ``max_chars`` itself.
"""

from __future__ import annotations

from collections.abc import Sequence

from memory_kernel._openai_http import (
    HTTPBacked,
    OpenAICompatibleHTTP,
    chat_content,
    chat_payload,
    checked_max_tokens,
)
from memory_kernel.errors import ConfigError, SummariserError
from memory_kernel.heart.extraction.chat import extraction_prompt
from memory_kernel.models.extraction import ExtractionTurn

__all__ = ["SUMMARY_SYSTEM_PROMPT", "ChatSummariser"]

# Backoff between attempts: 0.5 s, 1 s... capped; the kernel's timeout bounds the whole call.
_BACKOFF = (0.5, 4.0)

#: The system prompt; ``{max_chars}`` is the summary's length limit.
SUMMARY_SYSTEM_PROMPT = """\
You write the long-term memory of one conversation session between a user and an assistant.
You get its turns as JSON, oldest first. Answer with a summary in plain text of at most
{max_chars} characters: what the session was about and what is true at its end - the facts
about the user, their plans, preferences, decisions, names, dates, amounts and statuses that
will matter in later conversations. When a value changed during the session, give only the
newest one ("the book club now meets on Thursdays"). Write in the third person ("The user
..."); no greeting, no preamble, no list markers, nothing the turns do not say."""


class ChatSummariser(HTTPBacked):
    """An episode summariser that asks ``model`` at ``{base_url}/chat/completions``.

    ``timeout`` bounds each HTTP attempt, ``max_retries`` counts the extra attempts (the
    kernel's ``HeartConfig.episode_summariser_timeout_s`` bounds them all).
    ``max_turn_chars`` cuts each turn's text in the prompt; ``max_tokens`` caps the answer
    (sent when set). Use it as an async context manager, or call ``aclose()``.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout: float = 30.0,
        max_retries: int = 1,
        temperature: float = 0.0,
        max_turn_chars: int = 8000,
        max_tokens: int | None = None,
    ) -> None:
        if max_turn_chars < 1:
            raise ConfigError(f"ChatSummariser needs max_turn_chars >= 1; got {max_turn_chars}")
        self._max_tokens = checked_max_tokens("ChatSummariser", max_tokens)
        self._http = OpenAICompatibleHTTP(
            base_url, "/chat/completions", api_key=api_key, timeout=timeout,
            max_retries=max_retries, backoff=_BACKOFF, error=SummariserError,
            extra="ChatSummariser",
        )  # fmt: skip
        self._model = model
        self._temperature = temperature
        self._max_chars = max_turn_chars

    @property
    def name(self) -> str:
        return f"chat:{self._model}"

    async def summarise(self, turns: Sequence[ExtractionTurn], *, max_chars: int) -> str:
        payload = chat_payload(
            self._model, self._temperature, SUMMARY_SYSTEM_PROMPT.format(max_chars=max_chars),
            extraction_prompt(turns, max_chars=self._max_chars), max_tokens=self._max_tokens,
        )  # fmt: skip
        body = await self._http.post(payload, label=f"summariser {self.name!r}")
        text = chat_content(body)
        if text is None:
            raise SummariserError(f"summariser {self.name!r}: malformed completion")
        if not text.strip():
            raise SummariserError(f"summariser {self.name!r}: an empty summary")
        return text.strip()  # the kernel collapses whitespace and cuts it to its length
