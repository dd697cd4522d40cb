"""Layer 3, the quality gate: every rule rejects what it should and nothing else (pure)."""

from __future__ import annotations

import pytest

from memory_kernel.brain.gate import chat_prefix, check_quality
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
