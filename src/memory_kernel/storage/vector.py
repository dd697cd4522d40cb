"""pgvector columns in binary form.

The pool's asyncpg connections get pgvector's binary codec on connect, so vectors cross the
wire as float32 arrays instead of 384 numbers printed as text and parsed again. This column
type hands numpy arrays straight to that codec (and back).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pgvector.sqlalchemy import VECTOR
from sqlalchemy.engine import Dialect

from memory_kernel.vectors import Vector as VectorArray

__all__ = ["Vector", "as_array"]


class Vector(VECTOR):
    """``vector(dim)`` bound and returned as float32 numpy arrays."""

    cache_ok = True

    def bind_processor(self, dialect: Dialect) -> Any:
        def process(value: Any) -> Any:
            return None if value is None else np.asarray(value, dtype=np.float32)

        return process

    def result_processor(self, dialect: Dialect, coltype: Any) -> Any:
        return None  # the asyncpg codec already returns numpy arrays


def as_array(value: Any) -> VectorArray | None:
    """A stored vector as float32 numpy, ``None`` for none (depending on the driver path,
    pgvector hands back its own ``Vector`` type or an array)."""
    if value is None:
        return None
    if hasattr(value, "to_numpy"):
        value = value.to_numpy()
    return np.asarray(value, dtype=np.float32)
