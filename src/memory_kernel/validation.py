"""Input checks shared by every entry point: reject bad input before anything is written."""

from __future__ import annotations

import math
import re

from memory_kernel.errors import ValidationError

__all__ = ["MAX_ID_CHARS", "check_agent_id", "check_text", "check_unit_interval"]

MAX_ID_CHARS = 200
# Printable, no whitespace/control characters: ids end up in logs, partition names, URLs.
_ID = re.compile(r"^[^\s\x00-\x1f\x7f]{1,200}$")


def check_text(value: str, *, field: str, max_bytes: int, allow_empty: bool = False) -> str:
    """``value`` unchanged if it is storable text, else ``ValidationError``.

    Refuses NUL bytes (Postgres text cannot hold them), lone surrogates (not encodable as
    UTF-8), whitespace-only text unless ``allow_empty``, and more than ``max_bytes`` UTF-8.
    """
    if not isinstance(value, str):
        raise ValidationError(f"{field} must be a string, got {type(value).__name__}")
    if "\x00" in value:
        raise ValidationError(f"{field} contains a NUL byte")
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise ValidationError(f"{field} is not valid Unicode text (lone surrogate)") from exc
    if size > max_bytes:
        raise ValidationError(f"{field} is {size} bytes, more than the limit of {max_bytes}")
    if not allow_empty and not value.strip():
        raise ValidationError(f"{field} is empty")
    return value


def check_agent_id(value: str, *, field: str = "agent_id") -> str:
    """An id: 1–200 printable characters without whitespace."""
    if not isinstance(value, str) or not _ID.match(value):
        raise ValidationError(
            f"{field} must be 1-{MAX_ID_CHARS} printable characters without whitespace"
        )
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValidationError(f"{field} is not valid Unicode text") from exc
    return value


def check_unit_interval(value: float, *, field: str) -> float:
    """A finite number in [0, 1]."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValidationError(f"{field} must be a number")
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise ValidationError(f"{field} must be a finite number between 0 and 1, got {value}")
    return float(value)
