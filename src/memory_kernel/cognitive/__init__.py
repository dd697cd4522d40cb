"""The cognitive layer: frames, the informational filter (layer 1), pre_turn / post_turn."""

from memory_kernel.cognitive.hooks import CognitiveLayer

__all__ = ["CognitiveLayer"]
