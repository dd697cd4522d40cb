"""Frames: which kind of turn this is, and whether it deliberates (records a decision).

The host's frame selection wins (``TurnInput.frame``). Without one, a tiny, predictable
classifier picks a default — it never guesses "decision", because a wrong guess there is
exactly what filled the seed's store with noise:

- ``signals["frame"]`` if the host put it there;
- ``question`` when the message ends with a question mark;
- ``conversation`` otherwise.

Only frames in ``BrainConfig.auto_deliberation_frames`` (default ``decision`` and ``debug``)
start a deliberation; the others record a decision only through ``record_decision``.
"""

from __future__ import annotations

from collections.abc import Collection

from memory_kernel.models.turns import Frame, TurnInput

__all__ = ["deliberates", "select_frame"]


def select_frame(turn: TurnInput) -> str:
    """The turn's frame name (lowercase)."""
    if turn.frame:
        return turn.frame
    hinted = turn.signals.get("frame")
    if isinstance(hinted, str) and hinted.strip():
        return hinted.strip().casefold()
    if turn.message.rstrip().endswith("?"):
        return Frame.QUESTION.value
    return Frame.CONVERSATION.value


def deliberates(frame: str, auto_frames: Collection[str]) -> bool:
    """Whether a turn in ``frame`` starts a deliberation automatically."""
    return frame in auto_frames
