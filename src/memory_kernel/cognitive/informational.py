"""Layer 1: is this response a decision at all? Pure pattern rules over the response shape.

A response is *informational* (not recorded as a decision) when, in order:

1. ``frame`` — the frame does not deliberate (conversation, question, creative, task…);
   ``empty`` — the response has no words (only tool calls);
2. one of the pattern families matches (whole words, curly quotes straightened, in the
   first ``SCAN_CHARS`` characters):

   - ``completion`` — "done!", "completed!", "on it!", "pushed to", "review complete",
     "task is running"…; a bare "Done." / "Finished." only as a sentence of its own; a
     sentence reporting finished work ("I've updated the config") when the response holds
     no decision language ("because", "rather than", "we'll"…);
   - ``transition`` — *at the start of a sentence* (after fillers such as "ok," or "now"):
     "let me…", "next I'll", "moving on to", "starting with", "I'll start"…; anchored so
     "migrate in two phases, starting with reads" stays a decision;
   - ``report`` — "here's the result", "here are the results", "PR #12", "PR created",
     "spec scores"…;
   - ``status`` — "current status", "available tools", "I remember", "my memory",
     "here's my"…;
   - ``acknowledgement`` — the response opens with thanks, greetings or "sounds good";
   - ``error`` — the response opens with an error apology ("I encountered an error…");
   - ``question`` — every sentence of the first paragraph is a question (asking, not deciding);

3. ``action_report`` — tools ran and the first 300 characters hold two or more distinct report
   markers ("created", "updated", "fixed", "merged", "pushed"…): a log of what was done.

A ``record_decision`` tool call bypasses the filter: the agent said explicitly that it decided.
Phrases match as words: "pr #" does not fire inside "improvement #3".
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Iterator
from enum import StrEnum

from memory_kernel.brain.tool import RECORD_DECISION_TOOL
from memory_kernel.models.base import OutputModel
from memory_kernel.similarity import collapsed_head

__all__ = [
    "ACTION_MARKERS",
    "RECORD_DECISION_TOOL",
    "InfoFamily",
    "InformationalVerdict",
    "classify_response",
]

SCAN_CHARS = 500
# The first head of a long paragraph read for "every sentence is a question" (it grows 4x).
_FIRST_HEAD = 4096
ACTION_SCAN_CHARS = 300
ACTION_MARKERS = frozenset(
    {
        "done", "created", "updated", "fixed", "merged", "pushed", "committed", "deployed",
        "sent", "saved", "completed", "finished", "resolved", "applied",
    }
)  # fmt: skip


class InfoFamily(StrEnum):
    FRAME = "frame"
    EMPTY = "empty"
    COMPLETION = "completion"
    TRANSITION = "transition"
    REPORT = "report"
    STATUS = "status"
    ACKNOWLEDGEMENT = "acknowledgement"
    ERROR = "error"
    QUESTION = "question"
    ACTION_REPORT = "action_report"


class InformationalVerdict(OutputModel):
    informational: bool
    family: InfoFamily | None = None
    matched: str | None = None


# Anywhere in the scanned text.
_ANYWHERE: dict[InfoFamily, tuple[str, ...]] = {
    InfoFamily.COMPLETION: (
        "done!", "completed!", "finished!", "created!", "on it!", "all done", "pushed to",
        "review complete", "task is running", "is running in the background",
    ),
    InfoFamily.REPORT: (
        "here's the result", "here's the results", "here are the results", "here is the result",
        "here are the result", "here's what i found", "here is what i found", "pr #", "pr created",
        "spec scores", "here's the summary", "here is the summary", "here's a summary",
    ),
    InfoFamily.STATUS: (
        "current status", "available tools", "i remember", "my memory", "what i know",
        "here's my", "here is my", "live status", "status update", "status report",
    ),
}  # fmt: skip
# At the start of a sentence, after optional fillers.
_SENTENCE_START: dict[InfoFamily, tuple[str, ...]] = {
    InfoFamily.COMPLETION: ("done.", "done,", "finished.", "completed.", "all set"),
    InfoFamily.TRANSITION: (
        "let me", "now let me", "next i'll", "next, i'll", "next i will", "moving on to",
        "moving on", "starting with", "i'll start", "i'll begin", "i'll now", "now i'll",
        "first i'll", "first, i'll", "i'll check", "i'll look", "i'll take a look",
        "i'll dig", "i'll investigate", "checking", "looking into", "looking at",
    ),
}  # fmt: skip
# At the start of the response.
_RESPONSE_START: dict[InfoFamily, tuple[str, ...]] = {
    InfoFamily.ACKNOWLEDGEMENT: (
        "thanks", "thank you", "you're welcome", "no problem", "no worries", "happy to help",
        "glad to help", "good morning", "good afternoon", "good evening", "hello", "hi",
        "hey", "sounds good", "will do", "noted", "understood", "great question",
    ),
    InfoFamily.ERROR: (
        "i encountered an error", "sorry, i encountered an error", "an error occurred",
        "sorry, something went wrong", "i ran into an error", "i'm sorry, but i can't",
    ),
}  # fmt: skip
_FILLERS = r"(?:(?:ok|okay|alright|all right|right|great|good|so|now|then|well|sure)[,!.]?\s+)*"


def _phrase(phrase: str) -> str:
    # Word boundaries only where the phrase has a word character at that end: "pr #" must
    # not start inside "improvement", and "pr #12" must still match after the "#".
    lead = r"(?<!\w)" if re.match(r"\w", phrase) else ""
    trail = r"(?!\w)" if re.search(r"\w$", phrase) else ""
    return lead + re.escape(phrase) + trail


def _compile(
    table: dict[InfoFamily, tuple[str, ...]], prefix: str
) -> list[tuple[InfoFamily, re.Pattern[str]]]:
    return [
        (family, re.compile(prefix + "(?:" + "|".join(_phrase(p) for p in phrases) + ")"))
        for family, phrases in table.items()
    ]


_ANYWHERE_RE = _compile(_ANYWHERE, "")
_SENTENCE_RE = _compile(_SENTENCE_START, "^" + _FILLERS)
_START_RE = _compile(_RESPONSE_START, r"^[\W_]*")
# "I've updated the config." — a first-person report of finished work, unless the response
# also carries decision language ("…, so we'll pin it because…").
_PAST_REPORT = re.compile(
    "^" + _FILLERS + r"(?:i've|i have|i just|just|we've|we have)\s+(?:\w+ly\s+)?"
    r"(?!decided|chosen|opted|settled|concluded|determined|agreed|picked|selected)"
    r"(\w+ed|done|made|built|run|sent|written|set up|rebuilt|put|begun|started)(?!\w)"
)
_DECISION_CUES = re.compile(
    r"(?<!\w)(?:decid\w*|decision|chose|choose|going with|go with|should|recommend\w*|prefer\w*"
    r"|rather than|instead of|because|since|so that|trade-?off|at the cost of|we'll|we will"
    r"|let's|won't|will not|plan is)(?!\w)"
)
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?…])\s+|\n+")
_WORD = re.compile(r"\w+")


def _normalise(text: str) -> str:
    text = text.replace("\u2019", "'").replace("\u2018", "'").casefold()
    return " ".join(text.split())


def _normalised_head(text: str, limit: int) -> str:
    """``_normalise(text)[:limit]``, reading only the head of a long text (straightening
    quotes and case folding never remove or add whitespace, nor shorten a text)."""
    return _normalise(collapsed_head(text, limit))[:limit]


def _pieces(text: str) -> Iterator[str]:
    """``_SENTENCE_SPLIT.split(text)``, one piece at a time."""
    start = 0
    for match in _SENTENCE_SPLIT.finditer(text):
        yield text[start : match.start()]
        start = match.end()
    yield text[start:]


def _sentences(text: str) -> list[str]:
    return [s.strip(" \"'*_-#>") for s in _pieces(text) if s.strip()]


def _first_paragraph(text: str) -> str:
    return re.split(r"\n\s*\n", text.strip(), maxsplit=1)[0]


def _pattern_family(text: str) -> InformationalVerdict | None:
    for family, pattern in _START_RE + _ANYWHERE_RE:
        match = pattern.search(text)
        if match:
            return InformationalVerdict(informational=True, family=family, matched=match.group(0))
    sentences = _sentences(text)
    if not _DECISION_CUES.search(text):
        for sentence in sentences:
            match = _PAST_REPORT.search(sentence)
            if match:
                return InformationalVerdict(
                    informational=True, family=InfoFamily.COMPLETION, matched=match.group(0)
                )
    for sentence in sentences:
        for family, pattern in _SENTENCE_RE:
            match = pattern.search(sentence)
            if match:
                return InformationalVerdict(
                    informational=True, family=family, matched=match.group(0)
                )
    return None


def _all_questions(paragraph: str) -> bool:
    """Whether every sentence of the (raw) paragraph, normalised, is a question. Read from
    a head that grows until a sentence is not a question (usually the first) or the head is
    the whole paragraph; the head's last sentence may be cut, so it waits for a longer one."""
    size = _FIRST_HEAD
    while True:
        whole = size >= len(paragraph)
        pieces = list(_pieces(_normalise(paragraph[:size])))
        if not whole:
            pieces.pop()
        sentences = [s.strip(" \"'*_-#>") for s in pieces if s.strip()]
        if not all(s.endswith("?") for s in sentences):
            return False
        if whole:
            return bool(sentences)
        size *= 4


def _action_markers(text: str) -> set[str]:
    return {w for w in _WORD.findall(text[:ACTION_SCAN_CHARS]) if w in ACTION_MARKERS}


def classify_response(
    response_text: str,
    *,
    frame: str,
    tool_names: Iterable[str] = (),
    deliberation_frames: Collection[str],
) -> InformationalVerdict:
    """Layer 1's verdict on a response: informational (with the family), or maybe a decision."""
    tools = {name.strip().casefold() for name in tool_names}
    if RECORD_DECISION_TOOL in tools:
        return InformationalVerdict(informational=False)
    if frame not in deliberation_frames:
        return InformationalVerdict(informational=True, family=InfoFamily.FRAME, matched=frame)
    if not _WORD.search(response_text):
        return InformationalVerdict(informational=True, family=InfoFamily.EMPTY)
    paragraph = _first_paragraph(response_text)
    text = _normalised_head(response_text, SCAN_CHARS)
    found = _pattern_family(text)
    if found is not None:
        return found
    if _all_questions(paragraph):
        return InformationalVerdict(informational=True, family=InfoFamily.QUESTION)
    markers = _action_markers(text)
    if tools and len(markers) >= 2:
        return InformationalVerdict(
            informational=True,
            family=InfoFamily.ACTION_REPORT,
            matched=", ".join(sorted(markers)),
        )
    return InformationalVerdict(informational=False)
