"""Base classes of the public models.

Inputs raise :class:`memory_kernel.errors.ValidationError` (not pydantic's) so callers catch
one error tree — from the constructor and from ``model_validate``/``model_validate_json``
alike; outputs are frozen so nobody mistakes them for live rows.
"""

from __future__ import annotations

from typing import Any, Self

from pydantic import BaseModel, ConfigDict
from pydantic import ValidationError as PydanticValidationError

from memory_kernel.errors import ValidationError

__all__ = ["InputModel", "OutputModel", "ReturnedModel"]


class _Checked(BaseModel):
    """Every way of building the model raises ``memory_kernel.errors.ValidationError``."""

    def __init__(self, /, **data: Any) -> None:
        try:
            super().__init__(**data)
        except PydanticValidationError as exc:
            raise ValidationError(_summary(exc)) from exc

    @classmethod
    def model_validate(cls, *args: Any, **kwargs: Any) -> Self:
        try:
            return super().model_validate(*args, **kwargs)
        except PydanticValidationError as exc:
            raise ValidationError(_summary(exc)) from exc

    @classmethod
    def model_validate_json(cls, *args: Any, **kwargs: Any) -> Self:
        try:
            return super().model_validate_json(*args, **kwargs)
        except PydanticValidationError as exc:
            raise ValidationError(_summary(exc)) from exc


class InputModel(_Checked):
    """A validated, frozen input; invalid data raises ``memory_kernel.errors.ValidationError``."""

    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=False)


class OutputModel(BaseModel):
    """A frozen result the library returns."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class ReturnedModel(_Checked):
    """A frozen result the caller hands back later, perhaps rebuilt from a checkpoint
    (``TurnHandle``): validated like an input, since it may come from anywhere."""

    model_config = ConfigDict(frozen=True, extra="forbid")


def _summary(exc: PydanticValidationError) -> str:
    parts = []
    for error in exc.errors()[:5]:
        where = ".".join(str(p) for p in error["loc"]) or "input"
        parts.append(f"{where}: {error['msg']}")
    return f"invalid {exc.title}: " + "; ".join(parts)
