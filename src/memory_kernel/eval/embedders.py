"""Choosing an embedder, a judge or an extractor by name on the command line."""

from __future__ import annotations

import os
import re
from typing import Any

from memory_kernel.embeddings import (
    HashingEmbedder,
    HybridEmbedder,
    OpenAICompatibleEmbedder,
    SentenceTransformerEmbedder,
    StaticEmbedder,
)
from memory_kernel.errors import ConfigError
from memory_kernel.heart.extraction.chat import ChatExtractor
from memory_kernel.judges import ChatJudge
from memory_kernel.protocols import Embedder

__all__ = [
    "CHAT_FORM", "EMBEDDER_HELP", "close_embedder", "embedder_from_name",
    "extractor_from_name", "judge_from_name", "openai_endpoint",
]  # fmt: skip

EMBEDDER_HELP = (
    "hybrid (default: hashing + static, no torch), hashing, hybrid:<another name> (hashing "
    "+ that one), static (static token vectors of all-MiniLM-L6-v2), static:<model2vec dir>, "
    "st (offline all-MiniLM-L6-v2), "
    "st:<model or path>, or "
    "openai:<model>@<base_url>[#<dim>] (key from MEMORY_KERNEL_EMBED_API_KEY or OPENAI_API_KEY)"
)
# Dimensions of the usual OpenAI models, so their names need no "#dim".
_KNOWN_DIMS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}
_OPENAI = re.compile(r"^openai:(?P<model>[^@]+)@(?P<url>[^#]+?)(?:#(?P<dim>\d+))?$")


def openai_endpoint(name: str, what: str, form: str) -> tuple[str, str, int | None]:
    """``(model, base_url, dim or None)`` of ``openai:<model>@<base_url>[#<dim>]``; ``what``
    and ``form`` name the option in the error."""
    match = _OPENAI.match(name)
    if match is None:
        raise ConfigError(f"unreadable {what} {name!r}: use {form}")
    return match["model"], match["url"], int(match["dim"]) if match["dim"] else None


def _openai(name: str) -> Embedder:
    model, url, dim = openai_endpoint(name, "embedder", "openai:<model>@<base_url>[#<dim>]")
    dim = dim or _KNOWN_DIMS.get(model)
    if dim is None:
        raise ConfigError(f"embedder {name!r}: say the model's dimension, e.g. {name}#768")
    key = os.environ.get("MEMORY_KERNEL_EMBED_API_KEY") or os.environ.get("OPENAI_API_KEY")
    return OpenAICompatibleEmbedder(url, model, dim=dim, api_key=key)


def embedder_from_name(name: str) -> Embedder:
    """``hybrid`` (the default embedder), ``hashing``, ``hybrid:<name>`` (hashing beside the
    embedder ``name`` gives), ``static``, ``static:<model2vec directory>``,
    ``st`` (the offline all-MiniLM-L6-v2 package),
    ``st:<model name or local path>`` or ``openai:<model>@<base_url>[#<dim>]``."""
    if name == "hashing":
        return HashingEmbedder()
    if name == "st":
        return SentenceTransformerEmbedder.from_gt_package()
    if name.startswith("st:"):
        return SentenceTransformerEmbedder(name[3:])
    if name == "static":
        return StaticEmbedder.packaged()
    if name.startswith("static:"):
        return StaticEmbedder(name[7:])
    if name == "hybrid":
        return HybridEmbedder()
    if name.startswith("hybrid:"):
        return HybridEmbedder(HashingEmbedder(), embedder_from_name(name[7:]))
    if name.startswith("openai:"):
        return _openai(name)
    raise ConfigError(f"unknown embedder {name!r}: use {EMBEDDER_HELP}")


async def close_embedder(embedder: Embedder) -> None:
    """Release an HTTP-backed embedder's connections (the others hold none)."""
    if isinstance(embedder, OpenAICompatibleEmbedder):
        await embedder.aclose()
    elif isinstance(embedder, HybridEmbedder):
        for part in embedder.parts:
            await close_embedder(part)


CHAT_FORM = "openai:<model>@<base_url>"


def _chat_endpoint(name: str, what: str) -> tuple[str, str, dict[str, Any]]:
    """``(model, base_url, options)`` of ``openai:<model>@<base_url>`` for a chat client:
    ``api_key`` from ``MEMORY_KERNEL_<WHAT>_API_KEY``, else ``OPENAI_API_KEY``; and, when
    set, ``response_format`` and ``max_tokens`` from ``MEMORY_KERNEL_<WHAT>_RESPONSE_FORMAT``
    and ``MEMORY_KERNEL_<WHAT>_MAX_TOKENS``."""
    model, url, dim = openai_endpoint(name, what, CHAT_FORM)
    if dim is not None:
        raise ConfigError(f"{what} {name!r}: a chat model has no dimension; drop the #{dim}")
    env = f"MEMORY_KERNEL_{what.upper()}_"
    options: dict[str, Any] = {
        "api_key": os.environ.get(env + "API_KEY") or os.environ.get("OPENAI_API_KEY")
    }
    if (answer := os.environ.get(env + "RESPONSE_FORMAT")) is not None:
        options["response_format"] = answer
    if (cap := os.environ.get(env + "MAX_TOKENS")) is not None:
        if not cap.strip().isdigit():
            raise ConfigError(f"{env}MAX_TOKENS must be a whole number; got {cap!r}")
        options["max_tokens"] = int(cap)
    return model, url, options


def judge_from_name(name: str) -> ChatJudge:
    """``openai:<model>@<base_url>``: a :class:`ChatJudge` on that endpoint, set from the
    ``MEMORY_KERNEL_JUDGE_*`` variables (:func:`_chat_endpoint`)."""
    model, url, options = _chat_endpoint(name, "judge")
    return ChatJudge(url, model, **options)


def extractor_from_name(name: str) -> ChatExtractor:
    """``openai:<model>@<base_url>``: a :class:`ChatExtractor` on that endpoint, set from
    the ``MEMORY_KERNEL_EXTRACTOR_*`` variables (:func:`_chat_endpoint`)."""
    model, url, options = _chat_endpoint(name, "extractor")
    return ChatExtractor(url, model, **options)
