"""Layer 1: is this response a decision at all? A few certain rules, then a classifier.

A response is *informational* (not recorded as a decision) when, in order:

1. ``frame`` — the frame does not deliberate (conversation, question, creative, task…);
   ``empty`` — the response has no words (only tool calls);
2. a rule that is certain about the whole response:

   - ``error`` — it opens with the runtime's error apology ("I encountered an error…",
     "Sorry, something went wrong…");
   - ``question`` — every sentence of its first paragraph is a question (asking, not
     deciding);

3. the **decision classifier** (``brain.scorer``: logistic regression over the speech-act
   features of ``brain.speech``) gives it a probability of being a decision below
   ``BrainConfig.decision_threshold``. The verdict names the family whose features pushed
   it down the most — ``completion`` (a report of finished work: "Repo pulled — now at
   efedacd"), ``status`` (a status or info dump), ``report`` (lists, code spans, figures),
   ``transition`` ("Let me check…"), ``acknowledgement``, ``recall`` ("I recall that…"),
   ``error``, ``question`` — or ``no_decision`` when nothing in it commits, chooses or
   reasons.

Phrases that used to be rules on their own ("here's my", "done", "I remember"…) are
features now: "Here's my recommendation: use Redis, because…" opens like a status line but
commits and gives a reason, and the classifier weighs both. The features, their weights and
their measured precision and recall are in docs/tuning.md.

A ``record_decision`` tool call bypasses the filter: the agent said explicitly that it decided.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from enum import StrEnum

from memory_kernel.brain.scorer import DecisionScorer
from memory_kernel.brain.tool import RECORD_DECISION_TOOL
from memory_kernel.models.base import OutputModel

__all__ = [
    "RECORD_DECISION_TOOL",
    "InfoFamily",
    "InformationalVerdict",
    "classify_response",
]


class InfoFamily(StrEnum):
    FRAME = "frame"
    EMPTY = "empty"
    COMPLETION = "completion"
    TRANSITION = "transition"
    REPORT = "report"
    STATUS = "status"
    ACKNOWLEDGEMENT = "acknowledgement"
    RECALL = "recall"
    ERROR = "error"
    QUESTION = "question"
    NO_DECISION = "no_decision"


class InformationalVerdict(OutputModel):
    informational: bool
    family: InfoFamily | None = None
    matched: str | None = None
    #: The classifier's probability that the response is a decision (``None``: not asked).
    probability: float | None = None


# The agent runtime's error templates: a response that opens with one reports a failure.
_ERROR_START = re.compile(
    r"^[\W_]*(?:sorry,? )?(?:i encountered an error|an error occurred|an unexpected error "
    r"occurred|something went wrong|i ran into an error|i'm sorry, but i can't)(?!\w)"
)
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?…])\s+|\n+")
_WORD = re.compile(r"\w+")


def _normalise(text: str) -> str:
    text = text.replace("\u2019", "'").replace("\u2018", "'").casefold()
    return " ".join(text.split())


def _all_questions(response: str) -> bool:
    paragraph = re.split(r"\n\s*\n", response.strip(), maxsplit=1)[0]
    sentences = [s.strip(" \"'*_-#>") for s in _SENTENCE_SPLIT.split(paragraph) if s.strip()]
    return bool(sentences) and all(s.endswith("?") for s in sentences)


def classify_response(
    response_text: str,
    *,
    frame: str,
    tool_names: Iterable[str] = (),
    deliberation_frames: Collection[str],
    scorer: DecisionScorer,
    threshold: float,
) -> InformationalVerdict:
    """Layer 1's verdict on a response: informational (with the family), or a decision."""
    tools = {name.strip().casefold() for name in tool_names}
    if RECORD_DECISION_TOOL in tools:
        return InformationalVerdict(informational=False)
    if frame not in deliberation_frames:
        return InformationalVerdict(informational=True, family=InfoFamily.FRAME, matched=frame)
    if not _WORD.search(response_text):
        return InformationalVerdict(informational=True, family=InfoFamily.EMPTY)
    match = _ERROR_START.search(_normalise(response_text))
    if match:
        return InformationalVerdict(
            informational=True, family=InfoFamily.ERROR, matched=match.group(0).strip()
        )
    if _all_questions(response_text):
        return InformationalVerdict(informational=True, family=InfoFamily.QUESTION)
    scored = scorer.score(response_text)
    p = round(scored.probability, 4)
    if scored.probability >= threshold:
        return InformationalVerdict(informational=False, probability=p)
    return InformationalVerdict(
        informational=True, family=InfoFamily(scored.family), matched=f"p={p:.2f}", probability=p
    )
