"""``ChatJudge``: a judge backed by any OpenAI-compatible ``POST /chat/completions``.

Works with OpenAI and with local servers that copy its API (vLLM, llama.cpp, Ollama,
LiteLLM...). Needs ``httpx``: ``pip install 'memory-kernel[openai]'``.

Every kind of question goes through one generic, batched :meth:`ChatJudge.complete_json`:
a system prompt, one user prompt per item, and a pydantic model the JSON answer must fit.
Items are asked concurrently (bounded) and fail one by one: a slot holds a ``JudgeError``
when its call failed, timed out, or answered something that does not validate. Transport
errors, timeouts, HTTP 429 and 5xx are retried with exponential backoff; other 4xx are not.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any, TypeVar

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
from memory_kernel.errors import ConfigError, JudgeError
from memory_kernel.judges.base import AdmissionRequest, AdmissionVerdict

__all__ = ["ADMISSION_SYSTEM_PROMPT", "ChatJudge", "admission_prompt"]

M = TypeVar("M", bound=pydantic.BaseModel)

# Backoff between attempts: 0.2 s, 0.4 s... capped; a judge is off the hot path.
_BACKOFF = (0.2, 4.0)
_SNIPPET = 200
# Items of a run shown to the model; counts are always given in full.
_MAX_LISTED = 20

ADMISSION_SYSTEM_PROMPT = """\
You decide whether a finished agent run enters a long-term knowledge base of runs.
You see the new run and up to three similar runs already in the knowledge base.
Answer with one JSON object and nothing else:
{"decision": "ADD|NOT|REPLACE|MERGE", "target_run_id": "<run_id or null>", "reason": "<short>"}
- ADD: the new run adds valuable, non-redundant information.
- NOT: the new run is redundant (near-identical to a stored run, same outcome, nothing new).
- REPLACE: the new run is a better version of one stored run (e.g. same task, the old one
  failed and the new one succeeded); target_run_id is the run it replaces.
- MERGE: the new run is similar but complementary to one stored run (e.g. both succeeded
  with different references or approaches); target_run_id is that run.
target_run_id must be one of the run_ids shown, and is required for REPLACE and MERGE."""


def _listed(items: Sequence[str]) -> dict[str, Any]:
    return {"count": len(items), "items": list(items[:_MAX_LISTED])}


def admission_prompt(request: AdmissionRequest) -> str:
    """The user message for one admission request (JSON, so summaries cannot break it)."""
    run = request.run
    payload = {
        "new_run": {
            "summary": run.summary,
            "outcome": run.outcome,
            "references": _listed(run.references),
            "artifacts": _listed(run.artifacts),
        },
        "similar_runs": [
            {
                "run_id": str(c.id),
                "similarity": round(c.similarity, 3),
                "summary": c.summary,
                "outcome": c.outcome,
                "references": _listed(c.references),
                "artifacts": _listed(c.artifacts),
            }
            for c in request.candidates
        ],
    }
    return json.dumps(payload, ensure_ascii=False, indent=1)


class ChatJudge(HTTPBacked):
    """A judge that asks ``model`` at ``{base_url}/chat/completions``.

    ``timeout`` bounds each HTTP attempt, ``max_retries`` counts the extra attempts,
    ``max_concurrency`` the items of a batch asked at once. ``response_format``:
    ``"json_object"`` (the default), ``"json_schema"`` (the answer's JSON schema, not strict:
    servers that constrain decoding to it, as vLLM, llama.cpp and Ollama do, keep a small
    model's answer in shape), or ``"none"`` for servers that refuse both. ``max_tokens``
    caps each answer (sent as ``max_tokens`` when set): a small local model may otherwise
    write until its context is full, past the run's deadline. Use it as an async context
    manager, or call ``aclose()``.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout: float = 30.0,
        max_retries: int = 2,
        max_concurrency: int = 4,
        temperature: float = 0.0,
        response_format: ResponseFormat = "json_object",
        max_tokens: int | None = None,
    ) -> None:
        if max_concurrency < 1:
            raise ConfigError(f"ChatJudge needs max_concurrency >= 1; got {max_concurrency}")
        self._format, self._max_tokens = checked_chat_options(
            "ChatJudge", response_format, max_tokens
        )
        self._http = OpenAICompatibleHTTP(
            base_url, "/chat/completions", api_key=api_key, timeout=timeout,
            max_retries=max_retries, backoff=_BACKOFF, error=JudgeError, extra="ChatJudge",
        )  # fmt: skip
        self._url = self._http.url
        self._model = model
        self._max_concurrency = max_concurrency
        self._temperature = temperature

    @property
    def name(self) -> str:
        return f"chat:{self._model}"

    async def admit(
        self, requests: Sequence[AdmissionRequest]
    ) -> Sequence[AdmissionVerdict | JudgeError]:
        prompts = [admission_prompt(r) for r in requests]
        return await self.complete_json(ADMISSION_SYSTEM_PROMPT, prompts, AdmissionVerdict)

    async def complete_json(
        self, system: str, prompts: Sequence[str], schema: type[M]
    ) -> list[M | JudgeError]:
        """One answer per prompt, validated by ``schema``; failed items hold a JudgeError."""
        gate = asyncio.Semaphore(self._max_concurrency)

        async def one(prompt: str) -> M | JudgeError:
            async with gate:
                try:
                    return self._parse(await self._chat(system, prompt, schema), schema)
                except JudgeError as exc:
                    return exc

        return list(await asyncio.gather(*(one(p) for p in prompts)))

    async def _chat(self, system: str, prompt: str, schema: type[M]) -> bytes:
        # The schema is built only when it is sent (not for every item of every batch).
        shape = schema.model_json_schema() if self._format == "json_schema" else {}
        payload = chat_payload(
            self._model, self._temperature, system, prompt, max_tokens=self._max_tokens,
            response_format=self._format, schema=(schema.__name__, shape, False),
        )  # fmt: skip
        return await self._http.post(payload, label=f"judge {self.name!r}")

    def _parse(self, body: bytes, schema: type[M]) -> M:
        text = chat_content(body)
        if text is None:
            raise JudgeError(f"judge {self.name!r}: malformed completion from {self._url}")
        try:
            return schema.model_validate_json(text)
        except pydantic.ValidationError as exc:
            first = exc.errors()[0]["msg"] if exc.error_count() else "invalid"
            raise JudgeError(
                f"judge {self.name!r}: answer does not fit {schema.__name__}: {first}"
                f"{cut_note(body)}; answer: {text[:_SNIPPET]!r}"
            ) from exc
