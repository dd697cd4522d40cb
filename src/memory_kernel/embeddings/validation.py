"""Checks that sit between any embedder and the rest of the kernel.

Embedders are pluggable and may be remote, so nothing they return is trusted: every
vector is checked for shape and finiteness before it can reach the index, where a
single NaN would silently poison similarity search.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import numpy as np

from memory_kernel.errors import EmbedderError, InvalidVectorError
from memory_kernel.protocols import Embedder
from memory_kernel.vectors import FloatMatrix

__all__ = ["embed_checked", "validate_vectors"]


def validate_vectors(arr: object, *, dim: int, count: int) -> FloatMatrix:
    """Return ``arr`` as a C-contiguous float32 array of shape ``(count, dim)``.

    Raises ``InvalidVectorError`` when the shape is wrong or any value is NaN/inf.
    """
    try:
        # Convert in float64 first so a float64 overflow to inf in float32 is caught below.
        raw = np.asarray(arr, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidVectorError(f"vectors are not a numeric array: {exc}") from exc
    if raw.ndim != 2:
        raise InvalidVectorError(
            f"expected a 2-D array of shape ({count}, {dim}), got {raw.ndim}-D shape {raw.shape}"
        )
    rows, cols = raw.shape
    if rows != count:
        raise InvalidVectorError(f"expected {count} vectors, got {rows}")
    if cols != dim:
        raise InvalidVectorError(f"expected vectors of dimension {dim}, got dimension {cols}")
    # Overflow to inf is expected here and reported just below, not as a numpy warning.
    with np.errstate(over="ignore"):
        out = np.ascontiguousarray(raw, dtype=np.float32)
    finite = np.isfinite(out)
    if not finite.all():
        bad_row = int(np.argwhere(~finite)[0][0])
        kind = "NaN" if np.isnan(out[bad_row]).any() else "inf"
        raise InvalidVectorError(f"vector {bad_row} contains {kind} values")
    return out


# The explicit timeout is the point of this wrapper: every call site must decide one.
async def embed_checked(
    embedder: Embedder,
    texts: Sequence[str],
    *,
    timeout: float | None,  # noqa: ASYNC109
) -> FloatMatrix:
    """Embed ``texts`` with ``embedder``; wrap its failures and validate its answer.

    Any exception from the embedder (including a timeout) becomes ``EmbedderError``
    (an ``EmbedderError`` the adapter raised itself passes through unchanged); a
    malformed answer becomes ``InvalidVectorError``. Empty input never calls the embedder.
    """
    dim = embedder.dim
    if not texts:
        return np.zeros((0, dim), dtype=np.float32)
    name = _safe_name(embedder)
    try:
        async with asyncio.timeout(timeout):
            result = await embedder.embed(texts)
    except (InvalidVectorError, EmbedderError):
        # Already classified (e.g. an adapter's own EmbedderError); wrapping adds nothing.
        raise
    except TimeoutError as exc:
        raise EmbedderError(f"embedder {name!r} timed out after {timeout}s") from exc
    except Exception as exc:
        raise EmbedderError(f"embedder {name!r} failed: {type(exc).__name__}: {exc}") from exc
    return validate_vectors(result, dim=dim, count=len(texts))


def _safe_name(embedder: Embedder) -> str:
    # The name is only for messages; a broken property must not hide the real failure.
    try:
        return str(embedder.name)
    except Exception:
        return type(embedder).__name__
