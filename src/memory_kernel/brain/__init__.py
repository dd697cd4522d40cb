"""Brain: decisions behind a three-layer gate."""

from memory_kernel.brain.service import Brain

__all__ = ["Brain"]
