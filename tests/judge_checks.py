"""The judge's check questions (``consolidation.checks``, ``brain.review.GATE_CHECKS``) as a
test's judge meets them. A judge answering from a test's labels answers them right, unless
the test is about one that does not."""

from __future__ import annotations

import json
import uuid

from memory_kernel.brain.review import GATE_CHECKS
from memory_kernel.consolidation.checks import check_answer

#: The decision band's check questions by response, and their answers (``is_decision``).
CHECKS = {c.response: c.is_decision for c in GATE_CHECKS}


def fact_check(prompt: str) -> dict[str, str] | None:
    """The right answer if ``prompt`` (``judging.conflict_prompt``) is a check question."""
    return check_answer(uuid.UUID(f["fact_id"]) for f in json.loads(prompt)["facts"])
