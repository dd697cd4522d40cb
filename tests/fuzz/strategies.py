"""Hostile inputs: empty/whitespace/NUL/lone surrogates/10 MB/RTL/emoji text, NaN/inf/
negative numbers, garbage ids, wrong types."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from hypothesis import strategies as st

TEN_MB = "a" * (10 * 1024 * 1024)
SPECIAL_TEXT = [
    "",
    " ",
    "\t\n\r ",
    "\x00",
    "fact\x00with NUL",
    "\ud800",
    "lone \udfff surrogate",
    "مرحبا بالعالم، هذه حقيقة",  # RTL
    "שלום \u202e עולם",  # RTL + override
    "🚀🔥💾" * 50,
    "e\u0301\u0301\u0301 combining",
    "Robert'); DROP TABLE facts;--",
    "%s %(x)s :param $1 \\x00",
    TEN_MB,
    "x" * (64 * 1024 + 1),
]
# Every code point, surrogates included (Hypothesis leaves them out by default).
any_char = st.characters(codec=None, exclude_categories=())
text = st.one_of(
    st.sampled_from(SPECIAL_TEXT),
    st.text(any_char, max_size=60),
    st.text(max_size=300),
)
plausible = st.from_regex(r"[A-Za-z][A-Za-z ]{8,60}[a-z]", fullmatch=True)
some_text = st.one_of(text, plausible)
numbers = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(10**12), max_value=10**12),
    st.sampled_from([0, 1, 0.5, -1, 1.0000001, float("nan"), float("inf"), -0.0]),
)
junk: st.SearchStrategy[Any] = st.one_of(
    st.none(), st.booleans(), numbers, text, st.lists(st.integers(), max_size=3),
    st.just(object()),
)  # fmt: skip
agent_ids = st.one_of(st.sampled_from(["a1", "a2", "agent-\u00e9"]), text, junk)
maybe_numbers = st.one_of(st.none(), numbers)
ids = st.one_of(st.uuids(), st.just(uuid.UUID(int=0)), junk)
metadata = st.dictionaries(
    st.text(any_char, max_size=10),
    st.one_of(text, numbers, st.none(), st.lists(text, max_size=3)),
    max_size=3,
)
datetimes = st.one_of(
    st.datetimes(timezones=st.just(UTC)),
    st.datetimes(),  # naive
    st.just(datetime.max.replace(tzinfo=UTC)),
    st.just(datetime.min.replace(tzinfo=UTC)),
    junk,
)

# -- valid values, and "all valid but one field" -----------------------------------------

good_agent = st.sampled_from(["a1", "a2", "agent-\u00e9", "\u05d0-agent"])
good_text = plausible
unit = st.floats(min_value=0.0, max_value=1.0)
good_k = st.integers(min_value=1, max_value=50)
good_when = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
)


def fields(
    **spec: tuple[st.SearchStrategy[Any], st.SearchStrategy[Any]],
) -> st.SearchStrategy[dict[str, Any]]:
    """Keyword arguments with valid values except (usually) one field, which is hostile:
    every example reaches the code behind validation, and each field gets attacked alone
    (``"*"``: every field hostile at once; ``None``: all valid)."""
    names = list(spec)

    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        broken = draw(st.sampled_from([*names, None, "*"]))
        return {
            name: draw(bad if broken in (name, "*") else good) for name, (good, bad) in spec.items()
        }

    return build()
