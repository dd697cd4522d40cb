"""Input checks shared by every entry point: reject bad input before anything is written.

The limits (docs/reliability.md, "Input limits") live here and in the models that use them;
every check raises :class:`memory_kernel.errors.ValidationError`.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata

from memory_kernel.errors import ValidationError

__all__ = [
    "MAX_ID_CHARS",
    "MAX_JSON_DEPTH",
    "MAX_METADATA_BYTES",
    "MAX_MODE_CHARS",
    "check_agent_id",
    "check_json",
    "check_json_text",
    "check_mode",
    "check_text",
    "check_texts",
    "check_unit_interval",
]

MAX_ID_CHARS = 200
#: Largest ``metadata`` of a fact, decision or episode (UTF-8 JSON).
MAX_METADATA_BYTES = 64 * 1024
#: Deepest nesting of a JSON value (metadata, signals): deeper is an attack, not data.
MAX_JSON_DEPTH = 32
MAX_MODE_CHARS = 64
#: Most items of a list of texts (``recent_messages``, ``tool_results``, ``gists``).
MAX_TEXT_ITEMS = 1000
#: Most characters of such a list, all items together.
MAX_TEXT_ITEMS_CHARS = 4 * 1024 * 1024
# The usual id: printable ASCII without spaces (the fast path of check_agent_id).
_ASCII_ID = re.compile(r"[\x21-\x7e]+")
# Default-ignorable code points outside the format (Cf) category: they render as nothing,
# so two ids differing by one would be two tenants nobody can tell apart.
_INVISIBLE = re.compile(
    "[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u3164\ufe00-\ufe0f\uffa0\U000e0000-\U000e0fff]"
)
_MODE = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
# An escaped NUL in JSON text: \u0000 after an even run of backslashes (\\u0000 is text).
_JSON_NUL = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")
# Python prints integers of at most 4,300 digits; stay clear of it (~3,900 digits).
_MAX_INT_BITS = 13_000


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


def check_texts(values: list[str], *, field: str, max_bytes: int) -> list[str]:
    """``values`` unchanged if every item is storable text (empty allowed) of at most
    ``max_bytes``, with at most ``MAX_TEXT_ITEMS`` items and ``MAX_TEXT_ITEMS_CHARS`` in all."""
    if len(values) > MAX_TEXT_ITEMS:
        raise ValidationError(f"{field} has {len(values)} items, more than {MAX_TEXT_ITEMS}")
    for item in values:
        check_text(item, field=field, max_bytes=max_bytes, allow_empty=True)
    if sum(map(len, values)) > MAX_TEXT_ITEMS_CHARS:
        raise ValidationError(f"{field} holds more than {MAX_TEXT_ITEMS_CHARS} characters")
    return values


def check_agent_id(value: str, *, field: str = "agent_id") -> str:
    """An agent or session id in its one canonical spelling, else ``ValidationError``.

    1–200 characters; no whitespace, control, format (zero-width, soft hyphen, bidi), private
    use, unassigned or otherwise invisible characters; and NFKC-normalised
    (``unicodedata.normalize("NFKC", id) == id``: no full-width or compatibility forms, no
    decomposed accents). Two ids that look the same are then the same string, so a look-alike
    cannot become a second, invisible tenant. Case is kept: ``Alice`` and ``alice`` differ.
    """
    if not isinstance(value, str) or not 1 <= len(value) <= MAX_ID_CHARS:
        raise ValidationError(f"{field} must be a string of 1-{MAX_ID_CHARS} characters")
    if value.isascii():
        if _ASCII_ID.fullmatch(value):
            return value
        raise ValidationError(f"{field} contains whitespace or a control character")
    for char in value:
        if unicodedata.category(char)[0] in "CZ" or char.isspace():
            raise ValidationError(
                f"{field} contains an invisible, whitespace or control character "
                f"(U+{ord(char):04X})"
            )
    if _INVISIBLE.search(value):
        raise ValidationError(f"{field} contains an invisible character")
    if unicodedata.normalize("NFKC", value) != value:
        raise ValidationError(
            f"{field} is not in its canonical form: pass unicodedata.normalize('NFKC', id)"
        )
    return value


def check_mode(value: str, *, field: str = "mode") -> str:
    """A cognitive mode: a letter then letters, digits, ``_`` or ``-``; at most 64."""
    if not isinstance(value, str) or len(value) > MAX_MODE_CHARS or not _MODE.fullmatch(value):
        raise ValidationError(
            f"{field} must be a letter followed by at most {MAX_MODE_CHARS - 1} ASCII letters, "
            "digits, '_' or '-' (the relevance configuration's template_masks keys)"
        )
    return value


def check_json(
    value: object, *, field: str, max_bytes: int, max_depth: int = MAX_JSON_DEPTH
) -> None:
    """``value`` is JSON a JSONB column holds, else ``ValidationError``.

    Dicts with string keys, lists/tuples, strings without NUL or lone surrogates, finite
    numbers, integers of at most ~3,900 digits, booleans and ``None``; at most ``max_depth``
    levels of nesting and ``max_bytes`` of UTF-8 JSON. Walked without recursion, so a
    3,000-deep value fails cleanly; the size is bounded on the way and only encoded when the
    bounds cannot decide it.
    """
    low = high = 0  # bounds of the encoded size
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, str):
            size = _json_text(node, field)
            low, high = low + size + 2, high + 6 * size + 2  # worst case: \u00XX per byte
        elif isinstance(node, (dict, list, tuple)):
            if depth >= max_depth:
                raise ValidationError(f"{field} is nested deeper than {max_depth} levels")
            low, high = low + len(node) + 1, high + 2 * len(node) + 2  # brackets, , and :
            if isinstance(node, dict):
                for key, item in node.items():
                    if not isinstance(key, str):
                        raise ValidationError(f"{field} has a non-string key {key!r:.40}")
                    size = _json_text(key, field)
                    low, high = low + size + 2, high + 6 * size + 2
                    stack.append((item, depth + 1))
            else:
                stack.extend((item, depth + 1) for item in node)
        elif node is None or isinstance(node, bool):
            low, high = low + 4, high + 5
        elif isinstance(node, int):
            if node.bit_length() > _MAX_INT_BITS:
                raise ValidationError(f"{field} contains an integer too long for JSON")
            low, high = low + 1, high + node.bit_length() // 3 + 2
        elif isinstance(node, float):
            if not math.isfinite(node):
                raise ValidationError(f"{field} contains {node}, which JSON cannot hold")
            low, high = low + 1, high + 25
        else:
            raise ValidationError(f"{field} must be JSON: {type(node).__name__} is not")
        if low > max_bytes:
            raise _too_large(field, max_bytes)
    if high > max_bytes:
        encoded = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        if len(encoded.encode("utf-8")) > max_bytes:
            raise _too_large(field, max_bytes)


def check_json_text(text: str, *, field: str, max_bytes: int) -> None:
    """JSON text (``model_dump_json()``) a JSONB column holds: no escaped NUL (Postgres
    refuses ``\\u0000`` in JSONB) and at most ``max_bytes`` of UTF-8."""
    if "\\u0000" in text and _JSON_NUL.search(text):
        raise ValidationError(f"{field} contains a NUL character")
    if len(text.encode("utf-8")) > max_bytes:
        raise _too_large(field, max_bytes)


def _too_large(field: str, max_bytes: int) -> ValidationError:
    return ValidationError(f"{field} is larger than {max_bytes} bytes of JSON")


def _json_text(value: str, field: str) -> int:
    """The UTF-8 size of a JSON string (key or value) that Postgres can store."""
    if "\x00" in value:
        raise ValidationError(f"{field} contains a NUL character")
    try:
        return len(value.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise ValidationError(f"{field} is not valid Unicode text (lone surrogate)") from exc


def check_unit_interval(value: float, *, field: str) -> float:
    """A finite number in [0, 1]."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValidationError(f"{field} must be a number")
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise ValidationError(f"{field} must be a finite number between 0 and 1, got {value}")
    return float(value)
