"""The consolidation judge's check questions (``consolidation.checks``) as a test's judge
meets them: in a prompt it is sent. A judge answering from a test's labels answers them
right, unless the test is about one that does not."""

from __future__ import annotations

import json
import uuid

from memory_kernel.consolidation.checks import check_answer


def fact_check(prompt: str) -> dict[str, str] | None:
    """The right answer if ``prompt`` (``judging.conflict_prompt``) is a check question."""
    return check_answer(uuid.UUID(f["fact_id"]) for f in json.loads(prompt)["facts"])
