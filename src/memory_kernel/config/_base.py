"""The base of every configuration section: frozen, unknown keys refused."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["Frozen"]


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
