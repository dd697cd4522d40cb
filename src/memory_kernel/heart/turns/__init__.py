"""Turns: the conversation itself, every user message and assistant reply, kept and searchable."""

from memory_kernel.heart.turns.service import TurnService

__all__ = ["TurnService"]
