"""``ChatExtractor``: facts found by any OpenAI-compatible ``POST /chat/completions``.

Works with OpenAI and with local servers that copy its API (vLLM, llama.cpp, Ollama,
LiteLLM...). Needs ``httpx``: ``pip install 'memory-kernel[openai]'``. The HTTP client,
its timeouts and its retries (transport errors, timeouts, 429 and 5xx, exponential backoff)
are the judge's and the embedder's (``_openai_http``).

One request per batch: the turns go in as a JSON list, each with its ``index``; the model
answers one JSON object, ``{"facts": [{"turn", "content", "subject", "confidence"}]}``
(``response_format``: a strict ``json_schema`` by default, or ``json_object``, or none for
servers that refuse both), and each fact goes back to the turn it names. An answer that is no
completion, no JSON, not of that shape or names a turn that was not asked is an
``ExtractorError``: the queue keeps the turns and retries them. A single fact the kernel
cannot take (empty, oversized, a confidence outside 0-1) is left out and the rest kept.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

import pydantic

from memory_kernel._openai_http import (
    HTTPBacked,
    OpenAICompatibleHTTP,
    ResponseFormat,
    chat_content,
    chat_payload,
    checked_chat_options,
    cut_note,
)
from memory_kernel.errors import ConfigError, ExtractorError, ValidationError
from memory_kernel.models.extraction import ExtractedFact, ExtractionTurn
from memory_kernel.models.facts import PREFERENCE

__all__ = ["EXTRACTION_SCHEMA", "EXTRACTION_SYSTEM_PROMPT", "ChatExtractor", "extraction_prompt"]

_log = logging.getLogger(__name__)
# Backoff between attempts: 0.5 s, 1 s... capped; extraction is off the hot path.
_BACKOFF = (0.5, 8.0)
_SNIPPET = 200

EXTRACTION_SYSTEM_PROMPT = """\
You extract durable facts from a conversation between a user and an assistant, for the
assistant's long-term memory. You get the turns as JSON, oldest first, each with its index.
Extract what will still matter in later conversations: facts about the user and the people,
places, things, plans and preferences in their life; decisions, dates, amounts, names,
statuses. A value the user changes ("we moved to Lisbon", "the budget is now 40k") is a fact
of its own. Take facts from the user's turns, and from the assistant's only what the user
stated or confirmed. Skip greetings, questions, small talk, opinions on the weather, general
knowledge and anything only the assistant assumed.
Answer with one JSON object and nothing else:
{"facts": [{"turn": <index of the turn that states it>, "content": "<one self-contained
statement, in the third person, naming the user as 'The user'>", "subject": "<the slot it
sets: the entity and the attribute, lowercase, e.g. 'user city', 'sister noor job'; the same
words every time that slot is set>", "confidence": <0..1, how clearly it was stated>,
"preference": <true when it says what the user wants, likes or avoids, a rule they keep, or
how they want every answer ("The user wants code examples in TypeScript"), else false>}]}
Use {"facts": []} when there is nothing worth keeping."""

_FACT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "turn": {"type": "integer"},
        "content": {"type": "string"},
        "subject": {"type": ["string", "null"]},
        "confidence": {"type": "number"},
        "preference": {"type": "boolean"},
    },
    "required": ["turn", "content", "subject", "confidence", "preference"],
    "additionalProperties": False,
}
#: The JSON schema of an answer (sent as a strict ``json_schema`` response format).
EXTRACTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"facts": {"type": "array", "items": _FACT_SCHEMA}},
    "required": ["facts"],
    "additionalProperties": False,
}


class _Fact(pydantic.BaseModel):
    turn: int
    content: str
    subject: str | None = None
    confidence: float = 0.7
    preference: bool = False  # an answer without it (an older prompt, a lax model): no


class _Answer(pydantic.BaseModel):
    facts: list[_Fact]


def extraction_prompt(turns: Sequence[ExtractionTurn], *, max_chars: int = 8000) -> str:
    """The user message for a batch: the turns as JSON (so their texts cannot break it),
    each cut to ``max_chars``."""
    payload = {
        "turns": [
            {
                "index": i,
                "role": t.role,
                "said_at": t.said_at.isoformat(),
                "session": t.session_id,
                "text": t.text[:max_chars],
            }
            for i, t in enumerate(turns)
        ]
    }
    return json.dumps(payload, ensure_ascii=False, indent=1)


class ChatExtractor(HTTPBacked):
    """A fact extractor that asks ``model`` at ``{base_url}/chat/completions``.

    ``timeout`` bounds each HTTP attempt, ``max_retries`` counts the extra attempts.
    ``response_format``: ``"json_schema"`` (strict, the default), ``"json_object"``, or
    ``"none"`` for servers that refuse both. ``max_tokens`` caps the answer (sent when set).
    ``max_turn_chars`` cuts each turn's text in the prompt. Use it as an async context
    manager, or call ``aclose()``.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        temperature: float = 0.0,
        response_format: ResponseFormat = "json_schema",
        max_turn_chars: int = 8000,
        max_tokens: int | None = None,
    ) -> None:
        if max_turn_chars < 1:
            raise ConfigError(f"ChatExtractor needs max_turn_chars >= 1; got {max_turn_chars}")
        self._format, self._max_tokens = checked_chat_options(
            "ChatExtractor", response_format, max_tokens
        )
        self._http = OpenAICompatibleHTTP(
            base_url, "/chat/completions", api_key=api_key, timeout=timeout,
            max_retries=max_retries, backoff=_BACKOFF, error=ExtractorError, extra="ChatExtractor",
        )  # fmt: skip
        self._model = model
        self._temperature = temperature
        self._max_chars = max_turn_chars

    @property
    def name(self) -> str:
        return f"chat:{self._model}"

    async def extract(self, turns: Sequence[ExtractionTurn]) -> list[list[ExtractedFact]]:
        if not turns:
            return []
        payload = chat_payload(
            self._model, self._temperature, EXTRACTION_SYSTEM_PROMPT,
            extraction_prompt(turns, max_chars=self._max_chars), max_tokens=self._max_tokens,
            response_format=self._format, schema=("extracted_facts", EXTRACTION_SCHEMA, True),
        )  # fmt: skip
        body = await self._http.post(payload, label=f"extractor {self.name!r}")
        return self._parse(body, len(turns))

    def _parse(self, body: bytes, n: int) -> list[list[ExtractedFact]]:
        text = chat_content(body)
        if text is None:
            raise ExtractorError(f"extractor {self.name!r}: malformed completion")
        try:
            answer = _Answer.model_validate_json(text)
        except pydantic.ValidationError as exc:
            first = exc.errors()[0]["msg"] if exc.error_count() else "invalid"
            raise ExtractorError(
                f"extractor {self.name!r}: answer does not fit the schema: {first}"
                f"{cut_note(body)}; answer: {text[:_SNIPPET]!r}"
            ) from exc
        found: list[list[ExtractedFact]] = [[] for _ in range(n)]
        for fact in answer.facts:
            if not 0 <= fact.turn < n:
                raise ExtractorError(
                    f"extractor {self.name!r}: a fact names turn {fact.turn}, but the batch "
                    f"has {n} turn(s)"
                )
            try:
                found[fact.turn].append(
                    ExtractedFact(
                        content=fact.content,
                        subject=fact.subject,
                        confidence=fact.confidence,
                        category=PREFERENCE if fact.preference else None,
                    )
                )
            except ValidationError as exc:  # empty, oversized, confidence outside 0-1
                _log.warning("extractor %r: a fact left out: %s", self.name, exc)
        return found
