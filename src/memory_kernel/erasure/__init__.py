"""Erasure: forget memories by id, a whole session, or everything of an agent
(``policy`` says what goes with each)."""

from __future__ import annotations

from memory_kernel.erasure.service import ErasureService

__all__ = ["ErasureService"]
