"""Choosing an embedder by name on the command line."""

from __future__ import annotations

import os
import re

from memory_kernel.embeddings import (
    HashingEmbedder,
    OpenAICompatibleEmbedder,
    SentenceTransformerEmbedder,
)
from memory_kernel.errors import ConfigError
from memory_kernel.protocols import Embedder

__all__ = ["EMBEDDER_HELP", "close_embedder", "embedder_from_name"]

EMBEDDER_HELP = (
    "hashing (default), st (offline all-MiniLM-L6-v2), st:<model or path>, or "
    "openai:<model>@<base_url>[#<dim>] (key from MEMORY_KERNEL_EMBED_API_KEY or OPENAI_API_KEY)"
)
# Dimensions of the usual OpenAI models, so their names need no "#dim".
_KNOWN_DIMS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}
_OPENAI = re.compile(r"^openai:(?P<model>[^@]+)@(?P<url>[^#]+?)(?:#(?P<dim>\d+))?$")


def _openai(name: str) -> Embedder:
    match = _OPENAI.match(name)
    if match is None:
        raise ConfigError(f"unreadable embedder {name!r}: use openai:<model>@<base_url>[#<dim>]")
    model, url = match["model"], match["url"]
    dim = int(match["dim"]) if match["dim"] else _KNOWN_DIMS.get(model)
    if dim is None:
        raise ConfigError(f"embedder {name!r}: say the model's dimension, e.g. {name}#768")
    key = os.environ.get("MEMORY_KERNEL_EMBED_API_KEY") or os.environ.get("OPENAI_API_KEY")
    return OpenAICompatibleEmbedder(url, model, dim=dim, api_key=key)


def embedder_from_name(name: str) -> Embedder:
    """``hashing`` (default), ``st`` (the offline all-MiniLM-L6-v2 package),
    ``st:<model name or local path>`` or ``openai:<model>@<base_url>[#<dim>]``."""
    if name == "hashing":
        return HashingEmbedder()
    if name == "st":
        return SentenceTransformerEmbedder.from_gt_package()
    if name.startswith("st:"):
        return SentenceTransformerEmbedder(name[3:])
    if name.startswith("openai:"):
        return _openai(name)
    raise ConfigError(f"unknown embedder {name!r}: use {EMBEDDER_HELP}")


async def close_embedder(embedder: Embedder) -> None:
    """Release an HTTP-backed embedder's connections (the others hold none)."""
    if isinstance(embedder, OpenAICompatibleEmbedder):
        await embedder.aclose()
