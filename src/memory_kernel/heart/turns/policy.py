"""The rules of turns, pure: which texts of an exchange are stored, and their rows.

A turn is what was said, verbatim, with its time: the user's message at the time ``pre_turn``
began, the assistant's reply at the time ``post_turn`` records it. A text without a word
(an empty reply) is not stored: there is nothing in it to recall. Both turns of an exchange
that deliberated name its decision (``metadata["decision_id"]``): the decision's text came
from one of them, and erasing that turn erases it (``erasure.policy``).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from memory_kernel.similarity import words

__all__ = [
    "ASSISTANT", "EMBED_CHARS", "USER", "Said", "embed_text", "exchange", "rows", "vector_input",
]  # fmt: skip

USER = "user"
ASSISTANT = "assistant"
#: Only the first this many characters of a turn are embedded: embedders read a few hundred
#: tokens at most, and an HTTP embedder refuses a pasted document.
EMBED_CHARS = 8000


@dataclass(frozen=True, slots=True)
class Said:
    """One stored text of an exchange: who said it, what, when, and its place in it."""

    role: str
    content: str
    at: datetime
    seq: int


def exchange(message: str, reply: str, *, asked_at: datetime, replied_at: datetime) -> list[Said]:
    """The texts of one exchange worth storing, in the order they were said."""
    said = [Said(USER, message, asked_at, 0), Said(ASSISTANT, reply, replied_at, 1)]
    return [s for s in said if words(s.content)]


def embed_text(said: Said) -> str:
    """The part of a turn its vector is made from."""
    return said.content[:EMBED_CHARS]


def vector_input(table: str, text: str) -> str:
    """What a stored row's vector is made from, its text being ``text`` (its table's
    ``EMBEDDED_TEXT`` column): a turn's first ``EMBED_CHARS`` characters, any other
    memory's whole text, as their write paths embed them."""
    return text[:EMBED_CHARS] if table == "turns" else text


def rows(
    said: list[Said],
    vectors: list[Any],
    *,
    agent_id: str,
    session_id: str,
    episode_id: uuid.UUID | None,
    decision_id: uuid.UUID | None = None,
) -> list[dict[str, Any]]:
    """The rows of ``said`` (``vectors``: one per text, ``None`` when there is none);
    ``decision_id``: the exchange's deliberation."""
    metadata = {} if decision_id is None else {"decision_id": str(decision_id)}
    return [
        {
            "agent_id": agent_id,
            "id": uuid.uuid4(),
            "session_id": session_id,
            "episode_id": episode_id,
            "role": s.role,
            "content": s.content,
            "seq": s.seq,
            "embedding": vector,
            "metadata": metadata,
            "created_at": s.at,
        }
        for s, vector in zip(said, vectors, strict=True)
    ]
