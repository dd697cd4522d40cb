"""Embedders: the default (``default_embedder``: the hybrid of a lexical hashing vector and
static token vectors, no torch), each half alone, a local sentence-transformers model, an
HTTP API.

Every embedder is used through ``embed_checked``, which turns its failures into
``EmbedderError`` and rejects malformed vectors with ``InvalidVectorError``. The optional
adapters import their heavy dependencies only when constructed.
"""

from __future__ import annotations

from memory_kernel.embeddings.hashing import HashingEmbedder
from memory_kernel.embeddings.http import OpenAICompatibleEmbedder
from memory_kernel.embeddings.hybrid import HYBRID_NAME, HybridEmbedder, default_embedder
from memory_kernel.embeddings.sentence_transformers import SentenceTransformerEmbedder
from memory_kernel.embeddings.static import StaticEmbedder
from memory_kernel.embeddings.validation import embed_checked, validate_vectors

__all__ = [
    "HYBRID_NAME",
    "HashingEmbedder",
    "HybridEmbedder",
    "OpenAICompatibleEmbedder",
    "SentenceTransformerEmbedder",
    "StaticEmbedder",
    "default_embedder",
    "embed_checked",
    "validate_vectors",
]
