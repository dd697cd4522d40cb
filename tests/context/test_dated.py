"""Dated material keeps its date next to every value (pure): a long turn or episode line
restates its date at a sentence boundary, never inside a name or between a word and its
number, and a message's newlines never start an undated line."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime

from memory_kernel.context.dated import DATE_REACH, flatten, stamp, within_reach
from memory_kernel.context.nodes import format_hit
from memory_kernel.eval.answers import ContextText
from memory_kernel.models.context import MemoryHit, MemorySource

SAID = datetime(2024, 1, 28, 9, 30, tzinfo=UTC)
LONG = (
    "I'm 41 and finally taking retirement planning seriously. My portfolio is 80/20 "
    "stocks/bonds, all in my Schwab brokerage and a Roth IRA there, plus my 401(k) at work. "
    "My wife Aiko's 401(k) is at Fidelity. My OB is Dr. Marsh, who delivers at St. Vincent's. "
    "My target is to retire at 60. One rule: index funds only, no individual stocks, ever."
)


def _undated_words(line: str) -> list[str]:
    """Words of ``line`` that start more than 200 characters after the last date mention
    (the conversations suite's rule for "reads as current")."""
    ctx = ContextText(line)
    return [m.group() for m in re.finditer(r"\w+", line) if not ctx.dated_at(m.start())]


def test_a_short_text_is_left_as_it_is() -> None:
    assert within_reach("Closing is March 22.", SAID) == "Closing is March 22."


def test_a_long_text_restates_its_date_at_sentence_boundaries() -> None:
    out = within_reach(LONG, SAID)
    assert out.replace(f" {stamp(SAID)}", "") == LONG  # nothing else changes
    assert 1 <= out.count(stamp(SAID)) <= len(LONG) // DATE_REACH + 1
    assert "Dr. Marsh" in out and "St. Vincent's" in out  # abbreviations end no sentence
    for piece in out.split(stamp(SAID))[1:]:  # restated only where a sentence starts
        assert piece.startswith(" ") and piece.strip()[0].isupper()
    assert _undated_words(f"{stamp(SAID)} {out}") == []
    assert _undated_words(f"{stamp(SAID)} {LONG}")  # without it, the end reads undated


def test_a_long_sentence_is_cut_at_a_clause_never_before_its_number() -> None:
    sentence = (
        "The appraisal came in on value but underwriting asked for more documents about the "
        "freelance side income of the household so closing got pushed from June 28 to July 12 "
        "and the lease ends June 30 while the landlord agreed to a prorated extension for us"
    )
    out = within_reach(sentence, SAID, reach=80)
    assert "July 12" in out and "June 28" in out and "June 30" in out
    assert _undated_words(f"{stamp(SAID)} {out}") == []


def test_newlines_become_one_line() -> None:
    assert flatten("Include:\n\n1. Basics\n  2. People \n") == "Include: / 1. Basics / 2. People"


def test_a_recalled_turn_and_episode_read_dated_to_their_last_word() -> None:
    text = LONG.replace(". My", ".\n- My")
    for source in (MemorySource.TURN, MemorySource.EPISODE):
        hit = MemoryHit(
            source=source, id=uuid.uuid4(), text=text, similarity=0.5, confidence=0.7,
            recency=1.0, score=0.5, created_at=SAID, metadata={"role": "user"},
        )  # fmt: skip
        line = format_hit(hit)
        assert "\n" not in line and line.startswith("[28 January 2024] ")
        assert _undated_words(line) == []
    fact = MemoryHit(
        source=MemorySource.FACT, id=uuid.uuid4(), text="Retires at 58", similarity=0.5,
        confidence=0.7, recency=1.0, score=0.5, created_at=SAID,
    )  # fmt: skip
    assert format_hit(fact) == "Retires at 58"  # current facts are undated
