"""Layer 3, the quality gate at finalize: pure rules over the final description.

Four rules, from the seed's review of noisy decisions (first match wins):

1. ``too_short`` — fewer than ``min_chars`` characters after strip: no room for a decision.
2. ``placeholder_confidence`` — confidence is still the 0.5 placeholder of ``start()`` while
   the stakes are high or critical: a high-stakes decision nobody actually weighed. Not
   when the turn's tool calls errored: the agent decided while its tools failed (a
   rollback, a workaround), and a turn like that is the one whose decision must not be
   lost for a confidence nobody had the chance to state.
3. ``chat_prefix`` — it opens like chat ("Done", "On it", "Here's", "Got it", "Sure",
   "Okay", "Alright", "Working on", "Let me"…) *and*, when a decision classifier is given,
   the classifier (layer 1's, on the description and the reasoning) finds no decision in
   it: "Here's my recommendation: launch in Germany first, because…" opens like chat and
   is a decision. "I'll" is chat only when a progress verb follows ("I'll check…", "I'll
   start…"): "I'll schedule the backfill for Saturday" is a commitment.
4. ``error_template`` — it contains the agent runtime's error template.

Prefixes match whole words ("sure" does not fire on "surely"), after curly apostrophes
are straightened.

A decision that passes also gets the gate's **quality assessment** (:func:`quality_score`,
0 to 1), and a deliberation finalized without a stated confidence gets the confidence
:func:`confidence_from_quality` maps it to — in ``(0.5, 0.8]``, so it clears passive
recall's ``> 0.5``, instead of keeping the 0.5 placeholder that recall never injects.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memory_kernel.brain.scorer import DecisionScorer
from memory_kernel.models.decisions import PLACEHOLDER_CONFIDENCE, GateRule, GateVerdict
from memory_kernel.models.enums import Stakes

__all__ = [
    "CHAT_PREFIXES",
    "ERROR_TEMPLATE",
    "GATED_CONFIDENCE_MAX",
    "GATED_CONFIDENCE_MIN",
    "PROGRESS_VERBS",
    "SUBSTANTIAL_CHARS",
    "Classifier",
    "check_quality",
    "confidence_from_quality",
    "normalise",
    "quality_score",
]

CHAT_PREFIXES = (
    "done",
    "on it",
    "here's",
    "here is",
    "here are",
    "got it",
    "sure",
    "okay",
    "ok",
    "alright",
    "all right",
    "working on",
    "let me",
)
# After "I'll" / "I will" these announce what the agent is about to do next, not a choice.
PROGRESS_VERBS = (
    "start",
    "begin",
    "check",
    "look",
    "take a look",
    "get",
    "see",
    "try",
    "dig",
    "investigate",
    "review",
    "read",
    "report",
    "follow up",
    "keep",
    "let you know",
    "get back",
    "continue",
    "work",
    "go ahead",
    "handle",
    "help",
    "be",
    "do",
    "now",
    "first",
    "summarize",
    "explain",
)
ERROR_TEMPLATE = "encountered an error processing your request"

_HIGH_STAKES = frozenset({Stakes.HIGH, Stakes.CRITICAL})


def _alternation(phrases: tuple[str, ...]) -> str:
    return "|".join(re.escape(p) for p in sorted(phrases, key=len, reverse=True))


_CHAT = re.compile(rf"^(?:{_alternation(CHAT_PREFIXES)})(?!\w)")
_ILL_PROGRESS = re.compile(rf"^i(?:'ll| will) (?:{_alternation(PROGRESS_VERBS)})(?!\w)")


def normalise(text: str) -> str:
    """Lowercase, straight apostrophes, single spaces: what the phrase rules match on."""
    text = text.replace("\u2019", "'").replace("\u2018", "'").casefold()
    return " ".join(text.split())


def chat_prefix(description: str) -> str | None:
    """The chat prefix ``description`` opens with, or ``None``."""
    text = normalise(description).lstrip(" \"'*_-#>")
    match = _CHAT.match(text) or _ILL_PROGRESS.match(text)
    return match.group(0) if match else None


@dataclass(frozen=True, slots=True)
class Classifier:
    """Layer 1's decision classifier and its threshold, for rule 3's second opinion."""

    scorer: DecisionScorer
    threshold: float


def check_quality(
    description: str,
    *,
    confidence: float,
    stakes: Stakes,
    min_chars: int,
    reasoning: str | None = None,
    classifier: Classifier | None = None,
    tool_errors: bool = False,
) -> GateVerdict:
    """The quality gate's verdict on a decision about to be finalized. ``tool_errors``: the
    turn's tool calls errored (rule 2 does not apply); ``classifier``: rule 3 rejects a chat
    opening only when it finds no decision in the description and ``reasoning``."""
    stripped = description.strip()
    if len(stripped) < min_chars:
        return GateVerdict(
            passed=False,
            rule=GateRule.TOO_SHORT,
            reason=f"description has {len(stripped)} characters, fewer than {min_chars}",
        )
    if confidence == PLACEHOLDER_CONFIDENCE and stakes in _HIGH_STAKES and not tool_errors:
        return GateVerdict(
            passed=False,
            rule=GateRule.PLACEHOLDER_CONFIDENCE,
            reason=f"{stakes.value}-stakes decision still has the placeholder confidence",
        )
    prefix = chat_prefix(stripped)
    if prefix is not None:
        reason = f"opens like chat: {prefix!r}"
        if classifier is not None:
            text = stripped if not reasoning else f"{stripped}\n\n{reasoning.strip()}"
            p = classifier.scorer.probability(text)
            if p >= classifier.threshold:
                prefix = None
            reason += f", decision classifier p={p:.2f}"
    if prefix is not None:
        return GateVerdict(passed=False, rule=GateRule.CHAT_PREFIX, reason=reason)
    if ERROR_TEMPLATE in normalise(stripped):
        return GateVerdict(
            passed=False, rule=GateRule.ERROR_TEMPLATE, reason="contains the error template"
        )
    return GateVerdict(passed=True)


# --- the quality assessment of a decision that passed ---------------------------------

#: A description this long has room for the choice, its object and a qualifier (the
#: context shows 120 characters of a decision): past it, length adds nothing.
SUBSTANTIAL_CHARS = 80
#: A why or a rejected alternative in the text: what makes a choice a weighed one.
_RATIONALE = re.compile(
    r"(?<!\w)(?:because|since|so that|in order to|to avoid|due to|given that|"
    r"rather than|instead of|trade-?offs?|at the cost of|which means)(?!\w)"
    r"|,\s*so(?!\w)"
)
# The band a gated decision's confidence lies in. The floor is above passive recall's
# "> 0.5" with room to spare; the midpoint, 0.7, is what an unrated learned fact gets
# (HeartConfig.default_confidence): a gated but unrated decision is worth as much as an
# unrated fact, give or take what the gate saw in it. The ceiling leaves the top of the
# scale to confidences someone stated: the gate judges a decision's form, not whether it
# is right, so it never claims near-certainty.
GATED_CONFIDENCE_MIN = 0.6
GATED_CONFIDENCE_MAX = 0.8


def quality_score(description: str, *, reasoning: str | None, min_chars: int) -> float:
    """The gate's assessment of a decision that passed, in [0, 1]: half *substance* (how far
    past rule 1's ``min_chars`` the description goes, full at ``SUBSTANTIAL_CHARS``), half
    *rationale* (a why or an alternative in the description, or a reasoning at all) — the
    two things rule 1 demands room for ("a decision and its reason")."""
    length = len(description.strip())
    room = SUBSTANTIAL_CHARS - min_chars
    substance = 1.0 if room <= 0 else min(max((length - min_chars) / room, 0.0), 1.0)
    reasoned = bool(reasoning and reasoning.strip()) or bool(
        _RATIONALE.search(normalise(description))
    )
    return round(0.5 * substance + 0.5 * float(reasoned), 6)


def confidence_from_quality(quality: float) -> float:
    """The confidence of a gated decision nobody rated: linear in the gate's quality score,
    from ``GATED_CONFIDENCE_MIN`` (barely passed) to ``GATED_CONFIDENCE_MAX`` (full)."""
    q = min(max(quality, 0.0), 1.0)
    return round(GATED_CONFIDENCE_MIN + (GATED_CONFIDENCE_MAX - GATED_CONFIDENCE_MIN) * q, 6)
