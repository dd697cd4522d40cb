"""The extraction rules, pure: what a drain takes, backoff, parking, the facts' provenance."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from memory_kernel.config.extraction import ExtractionConfig
from memory_kernel.heart.extraction.policy import (
    Queued,
    claim_size,
    fact_inputs,
    parks,
    retry_at,
    take,
)
from memory_kernel.models.extraction import ExtractedFact, ExtractionTurn

NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)


def _row(i: int, *, due: timedelta = timedelta(0), attempts: int = 0) -> Queued:
    return Queued(turn_id=uuid.UUID(int=i + 1), due_at=NOW + due, attempts=attempts, turn=None)


def test_a_batch_halves_with_each_failure_of_its_oldest_turn() -> None:
    assert [claim_size(32, a) for a in range(7)] == [32, 16, 8, 4, 2, 1, 1]
    assert claim_size(1, 0) == 1 and claim_size(32, 10_000) == 1


def test_a_drain_takes_the_leading_due_turns_and_stops_at_one_that_is_not() -> None:
    rows = [_row(0), _row(1), _row(2, due=timedelta(seconds=1)), _row(3)]
    assert [r.turn_id.int for r in take(rows, now=NOW, batch_size=32)] == [1, 2]
    assert take(rows, now=NOW, batch_size=1) == rows[:1]
    assert take([_row(0, due=timedelta(seconds=1)), _row(1)], now=NOW, batch_size=32) == []
    assert take([], now=NOW, batch_size=32) == []
    failed = [_row(i, attempts=2) for i in range(10)]
    assert len(take(failed, now=NOW, batch_size=32)) == 8


def test_backoff_doubles_to_its_ceiling_and_parking_comes_at_max_attempts() -> None:
    cfg = ExtractionConfig(backoff_first_s=30, backoff_max_s=100, max_attempts=3)
    waits = [(retry_at(NOW, a, cfg) - NOW).total_seconds() for a in (1, 2, 3, 4)]
    assert waits == [30, 60, 100, 100]
    assert [parks(a, cfg) for a in (1, 2, 3, 4)] == [False, False, True, True]


def test_facts_carry_the_turn_and_its_episode_and_a_repeat_is_learned_once() -> None:
    episode = uuid.uuid4()
    turn = ExtractionTurn(
        agent_id="a", session_id="s", turn_id=uuid.UUID(int=7), episode_id=episode,
        role="user", text="My city is Paris.", said_at=NOW,
    )  # fmt: skip
    found = [
        ExtractedFact(content="The user's city is Paris.", subject="user city", confidence=0.9),
        ExtractedFact(content="The user's city is Paris.", subject="user city", confidence=0.9),
        ExtractedFact(content="The user likes maps.", subject=""),
    ]
    inputs = fact_inputs(turn, found, extractor="x", episode_exists=True)
    assert [(f.content, f.subject) for f in inputs] == [
        ("The user's city is Paris.", "user city"),
        ("The user likes maps.", None),
    ]
    assert inputs[0].derived_from == (episode,) and inputs[0].agent_id == "a"
    assert inputs[0].metadata == {
        "source": "extraction", "turn_id": str(uuid.UUID(int=7)), "session_id": "s",
        "role": "user", "said_at": NOW.isoformat(), "extractor": "x",
    }  # fmt: skip
    gone = fact_inputs(turn, found[:1], extractor="x", episode_exists=False)
    assert gone[0].derived_from == ()
