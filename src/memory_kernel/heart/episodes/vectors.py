"""The one place episodes ask the embedder: a summary's vector, or ``None`` on an outage."""

from __future__ import annotations

import logging

import numpy as np
import numpy.typing as npt

from memory_kernel.errors import EmbedderError, InvalidVectorError
from memory_kernel.runtime import Runtime
from memory_kernel.similarity import words

__all__ = ["Vector", "embed_or_none"]

Vector = npt.NDArray[np.float32]

_log = logging.getLogger("memory_kernel.heart.episodes")


async def embed_or_none(rt: Runtime, text: str) -> Vector | None:
    """The text's vector, or ``None`` when it has no words or the embedder failed."""
    if not words(text):
        return None
    try:
        vector = (await rt.embed([text]))[0]
    # A broken embedder's NaN / wrong-dimension answer (InvalidVectorError, a
    # ValidationError, not an EmbedderError) is an outage too, not the caller's fault.
    except (EmbedderError, InvalidVectorError) as exc:
        _log.warning("episode stored without a vector: %s", exc)
        return None
    # A zero vector has no direction: cosine against it is undefined.
    return vector if float(np.linalg.norm(vector)) > 0.0 else None
