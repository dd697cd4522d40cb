"""Choosing an embedder by name on the command line."""

from __future__ import annotations

from memory_kernel.embeddings import HashingEmbedder, SentenceTransformerEmbedder
from memory_kernel.errors import ConfigError
from memory_kernel.protocols import Embedder

__all__ = ["embedder_from_name"]


def embedder_from_name(name: str) -> Embedder:
    """``hashing`` (default), ``st`` (the offline all-MiniLM-L6-v2 package), or
    ``st:<model name or local path>``."""
    if name == "hashing":
        return HashingEmbedder()
    if name == "st":
        return SentenceTransformerEmbedder.from_gt_package()
    if name.startswith("st:"):
        return SentenceTransformerEmbedder(name[3:])
    raise ConfigError(f"unknown embedder {name!r}: use hashing, st or st:<model>")
