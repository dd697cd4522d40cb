"""Fact questions whose answer is not in doubt, asked ahead of each batch of the judge's
(``judging.Check``, ``ConsolidationConfig.judge_checks``).

The rails of ``judging.validate`` check an answer against its question: a winner among the
facts asked about, no merge across a changed value. A judge that answers "supersede" to
every conflict and names one of the facts passes them, and would retire every look-alike it
is asked about ("I bench 185 pounds" by "I squat 245 pounds"), the failure issue 21 feared
most. Two questions per kind tell such a judge: one whose answer is the change (a rent
raised; a note restated), one whose answer is "keep both" (two lifts; two people bringing
dessert). They were written for this and are in no data file; the facts' ids are fixed, and
nothing of them is stored.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import NamedTuple

from memory_kernel.consolidation.judging import (
    Check,
    ConflictFact,
    ConflictKind,
    ConflictRequest,
    ConflictVerdict,
    Resolution,
)

__all__ = ["FACT_CHECKS", "FactCheck", "check_answer", "fact_checks"]

_IDS = uuid.UUID("0f6d2c1e-8a4b-4e0b-9c5d-3b1f7e2a9d40")
_OLDER = datetime(2025, 1, 10, 9, 0, tzinfo=UTC)
_NEWER = datetime(2025, 6, 2, 18, 30, tzinfo=UTC)
_UPDATE = "possible new value of the older fact's slot"
_RESTATED = "possible restatement in other words"


class FactCheck(NamedTuple):
    kind: ConflictKind
    older: str
    newer: str
    #: SUPERSEDE: the newer fact wins; MERGE: either is the winner; KEEP_BOTH.
    answer: Resolution
    why: str  # the rule reason the question shows, as a real one would


FACT_CHECKS = (
    FactCheck(
        ConflictKind.CONFLICT,
        "My rent is $1,500 a month.",
        "The landlord raised my rent: I pay $1,650 a month now.",
        Resolution.SUPERSEDE,
        _UPDATE,
    ),
    FactCheck(
        ConflictKind.CONFLICT,
        "I can bench press 185 pounds.",
        "I can squat 245 pounds.",
        Resolution.KEEP_BOTH,
        _UPDATE,
    ),
    FactCheck(
        ConflictKind.MERGE,
        "The office wifi password is taped under the router.",
        "The wifi password for the office is on a sticker under the router.",
        Resolution.MERGE,
        _RESTATED,
    ),
    FactCheck(
        ConflictKind.MERGE,
        "Hannah is bringing dessert to the potluck.",
        "Pete is bringing dessert to the potluck too.",
        Resolution.KEEP_BOTH,
        _RESTATED,
    ),
)


def _fact(text: str, when: datetime) -> ConflictFact:
    return ConflictFact(
        id=uuid.uuid5(_IDS, text), content=text, category=None, confidence=0.8, stated_at=when
    )


def _request(check: FactCheck, agent_id: str) -> ConflictRequest:
    return ConflictRequest(
        agent_id=agent_id,
        kind=check.kind,
        facts=(_fact(check.older, _OLDER), _fact(check.newer, _NEWER)),
        similarity=0.6,
        rule_reason=check.why,
    )


def _passes(check: FactCheck) -> Callable[[ConflictVerdict], bool]:
    newer = uuid.uuid5(_IDS, check.newer)

    def right(verdict: ConflictVerdict) -> bool:
        if verdict.decision is not check.answer:
            return False
        return check.answer is not Resolution.SUPERSEDE or verdict.winner_id == newer

    return right


def fact_checks(kind: ConflictKind, agent_id: str) -> list[Check[ConflictRequest, ConflictVerdict]]:
    """The check questions of a batch of ``kind``."""
    return [Check(_request(c, agent_id), _passes(c)) for c in FACT_CHECKS if c.kind is kind]


def check_answer(ids: Iterable[uuid.UUID]) -> dict[str, str] | None:
    """The right answer to the check question about the facts ``ids``, as a judge writes
    it; ``None`` for any other question. For judges that answer from labels (the ceilings'
    scripts, tests)."""
    asked = set(ids)
    for check in FACT_CHECKS:
        newer = uuid.uuid5(_IDS, check.newer)
        if asked == {uuid.uuid5(_IDS, check.older), newer}:
            answer = {"decision": check.answer.value, "reason": "a check question"}
            return answer | {"winner_id": str(newer)}
    return None
