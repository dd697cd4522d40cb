"""The array types of embeddings, in one pure module (numpy only, no storage) so that policy
modules name them too; ``memory_kernel.runtime`` re-exports ``Vector``."""

from __future__ import annotations

from typing import TypeAlias

import numpy as np
import numpy.typing as npt

__all__ = ["FloatMatrix", "Vector"]

#: One embedding.
Vector: TypeAlias = npt.NDArray[np.float32]
#: Several embeddings, one a row.
FloatMatrix: TypeAlias = npt.NDArray[np.float32]
