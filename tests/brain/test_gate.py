"""Layer 3, the quality gate: every rule rejects what it should and nothing else (pure)."""

from __future__ import annotations

import pytest

from memory_kernel.brain.gate import (
    GATED_CONFIDENCE_MAX,
    GATED_CONFIDENCE_MIN,
    SUBSTANTIAL_CHARS,
    Classifier,
    chat_prefix,
    check_quality,
    confidence_from_quality,
    quality_score,
)
from memory_kernel.brain.scorer import default_scorer
from memory_kernel.config import ContextConfig
from memory_kernel.models.decisions import GateRule
from memory_kernel.models.enums import Stakes

REAL = "Use UUIDv7 for new tables so inserts stay index-friendly."


def _verdict(
    text: str, *, confidence: float = 0.8, stakes: Stakes = Stakes.MEDIUM
) -> GateRule | None:
    return check_quality(text, confidence=confidence, stakes=stakes, min_chars=20).rule


def test_real_decision_passes() -> None:
    verdict = check_quality(REAL, confidence=0.5, stakes=Stakes.MEDIUM, min_chars=20)
    assert verdict.passed
    assert verdict.rule is None


@pytest.mark.parametrize("text", ["Okay.", "   Ship it now.        ", "x" * 19])
def test_too_short_after_strip(text: str) -> None:
    assert _verdict(text) is GateRule.TOO_SHORT


def test_exactly_min_chars_passes() -> None:
    assert _verdict("Adopt Rust for it...") is None


@pytest.mark.parametrize("stakes", [Stakes.HIGH, Stakes.CRITICAL])
def test_placeholder_confidence_with_high_stakes(stakes: Stakes) -> None:
    assert _verdict(REAL, confidence=0.5, stakes=stakes) is GateRule.PLACEHOLDER_CONFIDENCE
    assert _verdict(REAL, confidence=0.51, stakes=stakes) is None


@pytest.mark.parametrize("stakes", [Stakes.LOW, Stakes.MEDIUM])
def test_placeholder_confidence_is_fine_for_lower_stakes(stakes: Stakes) -> None:
    assert _verdict(REAL, confidence=0.5, stakes=stakes) is None


@pytest.mark.parametrize(
    "text",
    [
        "Done! The migration ran cleanly on staging.",
        "On it, starting the rollout of the new cache.",
        "Here's the plan for the rest of the sprint.",
        "Here’s the plan for the rest of the sprint.",  # curly apostrophe
        "Got it, I will keep that in mind going forward.",
        "Sure, I can take care of the release notes.",
        "Okay, switching to the new branch naming now.",
        "ALRIGHT — moving the tickets to the next column.",
        "Working on the flaky integration test right now.",
        "Let me think about the retry policy a bit more.",
        "I'll check the logs and report back shortly.",
        "I’ll start with the database schema migration.",
    ],
)
def test_chat_prefixes_reject(text: str) -> None:
    assert _verdict(text) is GateRule.CHAT_PREFIX


@pytest.mark.parametrize(
    "text",
    [
        "I'll schedule the backfill for Saturday night, when write traffic is lowest.",
        "I'll reject the proposal to store raw card numbers; we tokenize at the edge.",
        "Surely the cache must go: we drop Memcached for Redis.",  # "sure" is a word prefix only
        "Donenfeld's patch is what we ship, because it is reviewed.",
        "Okta stays our identity provider for the next two years.",  # "ok" is not "okta"
        "Let's drop Python 3.9 in the next minor release.",
    ],
)
def test_word_prefixes_only(text: str) -> None:
    assert chat_prefix(text) is None
    assert _verdict(text) is None


CLASSIFIER = Classifier(default_scorer(), 0.5)


@pytest.mark.parametrize(
    ("text", "reasoning"),
    [
        ("Here's my recommendation: launch in Germany before France.",
         "Direct debit is already integrated there, so France would need a new payment "
         "method first; we'll revisit France next quarter."),
        ("Okay — we'll keep the weekly release train instead of continuous deploys, "
         "because the end-to-end suite takes forty minutes.", None),
    ],
)  # fmt: skip
def test_a_chat_opening_that_decides_passes_with_the_classifier(
    text: str, reasoning: str | None
) -> None:
    assert chat_prefix(text) is not None
    assert _verdict(text) is GateRule.CHAT_PREFIX  # the rule alone
    verdict = check_quality(
        text, confidence=0.8, stakes=Stakes.MEDIUM, min_chars=20, reasoning=reasoning,
        classifier=CLASSIFIER,
    )  # fmt: skip
    assert verdict.passed


@pytest.mark.parametrize(
    "text", ["Done! The migration ran cleanly on staging.", "Sure, I can take care of it."]
)
def test_a_chat_opening_without_a_decision_is_still_rejected(text: str) -> None:
    verdict = check_quality(
        text, confidence=0.8, stakes=Stakes.MEDIUM, min_chars=20, classifier=CLASSIFIER
    )
    assert verdict.rule is GateRule.CHAT_PREFIX
    assert verdict.reason is not None and "decision classifier p=" in verdict.reason


def test_tool_errors_exempt_the_placeholder_confidence_only() -> None:
    def rule(text: str) -> GateRule | None:
        return check_quality(
            text, confidence=0.5, stakes=Stakes.HIGH, min_chars=20, tool_errors=True
        ).rule

    assert _verdict(REAL, confidence=0.5, stakes=Stakes.HIGH) is GateRule.PLACEHOLDER_CONFIDENCE
    assert rule(REAL) is None
    assert rule("Done! The migration ran cleanly on staging.") is GateRule.CHAT_PREFIX
    assert rule("too short") is GateRule.TOO_SHORT


def test_error_template() -> None:
    text = "I encountered an error processing your request. Please try again."
    assert _verdict(text) is GateRule.ERROR_TEMPLATE
    assert _verdict("Sorry — " + text.upper()) is GateRule.ERROR_TEMPLATE


def test_rules_report_a_reason() -> None:
    verdict = check_quality(
        "Sure thing, will do it.", confidence=0.9, stakes=Stakes.LOW, min_chars=20
    )
    assert not verdict.passed
    assert verdict.reason is not None and "sure" in verdict.reason


# --- the quality score and the confidence of a gated decision ---------------------------

TERSE = "Ship the release on Friday."  # passes the gate: no reason, barely past min_chars
REASONED = "Ship the release on Friday because the freeze starts Monday."


def _quality(text: str, reasoning: str | None = None, min_chars: int = 20) -> float:
    return quality_score(text, reasoning=reasoning, min_chars=min_chars)


def test_quality_is_half_substance_half_rationale() -> None:
    assert _quality("x" * 20) == 0.0  # exactly the minimum, no reason
    assert _quality("x" * SUBSTANTIAL_CHARS) == 0.5  # full substance, no reason
    assert _quality("x" * (SUBSTANTIAL_CHARS * 3)) == 0.5  # length beyond that adds nothing
    assert _quality("x" * 20, reasoning="the freeze starts Monday") == 0.5
    long_reasoned = "We'll keep one repository rather than split it, so CI stays one pipeline."
    assert len(long_reasoned) < SUBSTANTIAL_CHARS
    assert 0.5 < _quality(long_reasoned) < 1.0
    assert _quality(long_reasoned + " The tooling assumes it.") == 1.0


@pytest.mark.parametrize(
    "cue",
    ["because", "since", "so that", "rather than", "instead of", "to avoid", "trade-off", ", so"],
)
def test_a_stated_why_or_alternative_counts_as_rationale(cue: str) -> None:
    separator = "" if cue.startswith(",") else " "
    text = f"Use Redis for sessions{separator}{cue} it is fast"
    assert _quality("Use Redis for sessions, it is fast") < 0.5  # no cue: substance only
    assert _quality(text) >= 0.5


def test_rationale_words_match_as_words_only() -> None:
    assert _quality("Adopt the becausely framework.") == _quality("Adopt the otherwise framework.")


def test_blank_reasoning_is_no_rationale() -> None:
    assert _quality(TERSE, reasoning="   ") == _quality(TERSE)


def test_no_room_between_minimum_and_substantial_means_full_substance() -> None:
    assert _quality("x" * 5, min_chars=SUBSTANTIAL_CHARS) == 0.5
    assert _quality("x" * 5, min_chars=0) == pytest.approx(0.5 * 5 / SUBSTANTIAL_CHARS)


def test_confidence_is_linear_in_quality_over_the_band() -> None:
    assert confidence_from_quality(0.0) == GATED_CONFIDENCE_MIN
    assert confidence_from_quality(1.0) == GATED_CONFIDENCE_MAX
    mid = (GATED_CONFIDENCE_MIN + GATED_CONFIDENCE_MAX) / 2
    assert confidence_from_quality(0.5) == pytest.approx(mid)
    assert confidence_from_quality(-1.0) == GATED_CONFIDENCE_MIN  # clamped
    assert confidence_from_quality(2.0) == GATED_CONFIDENCE_MAX
    qualities = [i / 20 for i in range(21)]
    confidences = [confidence_from_quality(q) for q in qualities]
    assert confidences == sorted(confidences) and len(set(confidences)) == len(confidences)


@pytest.mark.parametrize("text", [TERSE, REASONED, REAL, "x" * 20, "y" * 400])
def test_every_decision_that_passes_is_recalled_passively(text: str) -> None:
    assert check_quality(text, confidence=0.5, stakes=Stakes.MEDIUM, min_chars=20).passed
    confidence = confidence_from_quality(_quality(text))
    assert confidence > ContextConfig().passive_min_confidence
    assert confidence < 1.0


def test_a_reasoned_decision_outranks_a_terse_one() -> None:
    assert confidence_from_quality(_quality(REASONED)) > confidence_from_quality(_quality(TERSE))
