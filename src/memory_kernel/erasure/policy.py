"""The rules of erasure, pure: which ids a caller may name, and what goes with each.

Erasure deletes a memory and every memory *derived from its content*, nothing it was only
near:

- a fact: its earlier versions (the facts it superseded, the duplicates merged into it),
  however far back; a newer version that replaced it stays (it says something else);
- a turn: the facts extracted from it; the session's other turns stay. The episode it
  belonged to stays too, its summary (made from its turns, so it may quote the erased one)
  made again from the turns it still has (:func:`remade_summary`): an episode's summary is
  made from its own turns only (a MERGE or a REPLACE keeps each one's), so the episodes
  merged into it or replaced by it stay as they are. An ongoing episode goes on (a
  ``post_turn`` of a turn already begun records into it); an ended one with no turn left
  is erased as if named;
- an episode: its earlier versions (the episodes merged into it or that it replaced); its
  turns stay (they are what was said, the episode only summarised them);
- a decision: itself. A turn takes the decision of its exchange whose text came from it:
  a deliberation keeps the user's message as its description until it is finalized (a
  rejected one keeps it for good), and takes the reply's when it is;
- a session (``forget_session``): its turns, episodes and decisions, and with them the facts
  extracted from those turns or remembered in those episodes;
- an agent (``erase_agent``): every row it has.

With each memory go the audit rows about it and the recorded ``post_turn`` results that name
it; what stays stops pointing at what went.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from memory_kernel.cognitive.draft import summarise_message
from memory_kernel.errors import NotFoundError, ValidationError
from memory_kernel.heart.episodes.summary import SummaryTurn, summarise_turns

__all__ = ["ERASED_SUMMARY", "MAX_IDS", "Seeds", "checked_ids", "remade_summary", "seeds"]

#: Ids one ``forget`` call may name (a larger erasure is several calls, or ``erase_agent``).
MAX_IDS = 1000
#: The summary of an ongoing episode none of whose turns is left.
ERASED_SUMMARY = "(what was said so far in this conversation was erased)"


@dataclass(frozen=True, slots=True)
class Seeds:
    """What the caller named, by kind; the cascade (``store``) adds what derives from it."""

    facts: frozenset[uuid.UUID] = frozenset()
    episodes: frozenset[uuid.UUID] = frozenset()
    turns: frozenset[uuid.UUID] = frozenset()
    decisions: frozenset[uuid.UUID] = frozenset()
    #: ``forget_session``: every turn, episode and decision of this session.
    session: str | None = None


def checked_ids(ids: Iterable[uuid.UUID | str]) -> frozenset[uuid.UUID]:
    """The memory ids to forget: UUIDs (or their text), at least one, at most ``MAX_IDS``;
    anything else is a ``ValidationError``."""
    if isinstance(ids, (str, bytes, uuid.UUID)) or not isinstance(ids, Iterable):
        raise ValidationError("memory_ids must be a collection of ids, not a single value")
    out: set[uuid.UUID] = set()
    for n, value in enumerate(ids):
        if n == MAX_IDS:  # counted as given: an endless iterator ends here too
            raise ValidationError(f"at most {MAX_IDS} memory ids per call")
        if isinstance(value, uuid.UUID):
            out.add(value)
        elif isinstance(value, str):
            try:
                out.add(uuid.UUID(value))
            except ValueError as exc:
                raise ValidationError(f"memory id {value!r} is not a UUID") from exc
        else:
            raise ValidationError(f"memory id {value!r} is not a UUID")
    if not out:
        raise ValidationError("memory_ids is empty: name at least one memory")
    return frozenset(out)


def seeds(ids: frozenset[uuid.UUID], kinds: Mapping[uuid.UUID, str]) -> Seeds:
    """The named ids by kind (``kinds``: what the agent's store says each one is);
    ``NotFoundError`` naming those that are no memory of the agent, before anything is
    erased."""
    missing = sorted(str(i) for i in ids if i not in kinds)
    if missing:
        shown = ", ".join(missing[:5]) + (" …" if len(missing) > 5 else "")
        raise NotFoundError(f"{len(missing)} id(s) are no memory of this agent: {shown}")

    def of(kind: str) -> frozenset[uuid.UUID]:
        return frozenset(i for i in ids if kinds[i] == kind)

    return Seeds(
        facts=of("fact"), episodes=of("episode"), turns=of("turn"), decisions=of("decision")
    )


def remade_summary(turns: Sequence[SummaryTurn], *, ongoing: bool, max_chars: int) -> str | None:
    """The summary of an episode one of whose turns was erased, made again from the ``turns``
    it still has as its end makes one (extractive, at most ``max_chars``); with none left,
    ``ERASED_SUMMARY`` for an ongoing episode (an end with no new turn abandons it) and
    ``None`` for an ended one, which is erased."""
    if not turns:
        return ERASED_SUMMARY if ongoing else None
    first = next((t for t in turns if t.role == "user"), turns[0])
    return summarise_turns(turns, max_chars=max_chars, fallback=summarise_message(first.content))
