"""Layer 1, the informational filter (certain rules, then the decision classifier), plus frame
selection and decision drafting (pure)."""

from __future__ import annotations

import pytest

from memory_kernel.brain.scorer import default_scorer
from memory_kernel.cognitive.draft import draft_decision, summarise_message
from memory_kernel.cognitive.frames import deliberates, select_frame
from memory_kernel.cognitive.informational import (
    InfoFamily,
    InformationalVerdict,
    classify_response,
)
from memory_kernel.models.turns import ToolResult, TurnInput, TurnOutcome

FRAMES = frozenset({"decision", "debug"})
DECISION = "We'll use PostgreSQL rather than a separate vector store, because it keeps one system."


def _verdict(
    text: str, *, frame: str = "decision", tools: tuple[str, ...] = ()
) -> InformationalVerdict:
    verdict = classify_response(
        text, frame=frame, tool_names=tools, deliberation_frames=FRAMES,
        scorer=default_scorer(), threshold=0.5,
    )  # fmt: skip
    assert verdict.informational == (verdict.family is not None)
    return verdict


def _family(text: str, **kw: object) -> InfoFamily | None:
    return _verdict(text, **kw).family  # type: ignore[arg-type]


@pytest.mark.parametrize("frame", ["conversation", "question", "creative", "task"])
def test_non_deliberating_frames_are_informational(frame: str) -> None:
    assert _family(DECISION, frame=frame) is InfoFamily.FRAME


@pytest.mark.parametrize("frame", ["decision", "debug"])
def test_a_decision_passes_in_deliberating_frames(frame: str) -> None:
    verdict = _verdict(DECISION, frame=frame)
    assert verdict.family is None
    assert verdict.probability is not None and verdict.probability >= 0.5


def test_record_decision_bypasses_the_filter() -> None:
    assert _family("Done! Pushed to main.", frame="task", tools=("record_decision",)) is None


@pytest.mark.parametrize(
    ("text", "family"),
    [
        ("   ", InfoFamily.EMPTY),
        ("I encountered an error processing your request.", InfoFamily.ERROR),
        ("Sorry, something went wrong. We'll retry with a larger batch.", InfoFamily.ERROR),
        ("Should we use Redis or Memcached? Which one do you run today?", InfoFamily.QUESTION),
    ],
)
def test_certain_rules(text: str, family: InfoFamily) -> None:
    verdict = _verdict(text)
    assert verdict.family is family
    assert verdict.probability is None  # decided before the classifier is asked


# Responses written for these tests (not rows of the development files the weights were
# trained on): what each family of noise looks like, and the known misses of issue 21.
@pytest.mark.parametrize(
    ("text", "family"),
    [
        ("Done! ✅ All green.", InfoFamily.COMPLETION),
        ("Branch pushed to origin, waiting on CI.", InfoFamily.COMPLETION),
        ("I've updated the config and restarted the service.", InfoFamily.COMPLETION),
        ("Created the index, updated the stats and committed the migration.",
         InfoFamily.COMPLETION),
        ("Repo pulled — now at efedacd on main with 3 new commits.", InfoFamily.COMPLETION),
        ("Now let me look at the failing test.", InfoFamily.TRANSITION),
        ("I read the diff. Next, I'll run the linters.", InfoFamily.TRANSITION),
        ("I'll start by reading the config.", InfoFamily.TRANSITION),
        ("Current status: waiting on review.", InfoFamily.STATUS),
        ("Here’s my full live status: 3 open.", InfoFamily.STATUS),  # curly apostrophe
        ("Here are the results: 12 rows.", InfoFamily.STATUS),
        ("Available tools: bash, git, sql.", InfoFamily.REPORT),
        ("Available endpoints:\n- GET /v1/users\n- POST /v1/users\n- GET /v1/users/{id}\n"
         "- DELETE /v1/users/{id}\n- GET /v1/health", InfoFamily.REPORT),
        ("I remember you like short answers.", InfoFamily.RECALL),
        ("I recall that the staging cluster was moved to spot instances last spring.",
         InfoFamily.RECALL),
        ("Thanks, that helps a lot!", InfoFamily.ACKNOWLEDGEMENT),
        ("On it! 🚀", InfoFamily.ACKNOWLEDGEMENT),
    ],
)  # fmt: skip
def test_noise_is_dropped_and_named(text: str, family: InfoFamily) -> None:
    verdict = _verdict(text)
    assert verdict.family is family
    assert verdict.probability is not None and verdict.probability < 0.5
    assert verdict.matched == f"p={verdict.probability:.2f}"


@pytest.mark.parametrize(
    "text",
    [
        # Words, not substrings: "pr #" inside "improvement #3", "done" inside "abandoned".
        "The improvement #3 is what we ship: we'll keep the old parser because it is faster.",
        "We abandoned the rewrite; keep the current parser because it is battle-tested.",
        # Transitions only at a sentence start, not mid-sentence.
        "Migrate in two phases, starting with the read path, because writes are riskier.",
        "I'll schedule the backfill for Saturday night, when write traffic is lowest.",
        # A decision that ends with a question is still a decision.
        "We'll pin numpy below 3.0 for this release. Does that work for you?",
        "I've decided to retry with exponential backoff instead of failing fast.",
        "Let's drop Python 3.9 in the next minor release; it is end-of-life.",
        # Opens like a status line, but recommends and gives a reason (issue 21).
        "Here's my recommendation: use Redis for the session cache rather than Memcached, "
        "because we already run it and it expires keys natively.",
    ],
)
def test_decisions_pass(text: str) -> None:
    assert _family(text) is None


def test_the_threshold_is_the_cut() -> None:
    text = "Available tools: bash, git, sql."
    p = _verdict(text).probability
    assert p is not None
    for threshold, dropped in ((p - 1e-3, False), (p + 1e-3, True)):
        verdict = classify_response(
            text, frame="decision", deliberation_frames=FRAMES, scorer=default_scorer(),
            threshold=threshold,
        )  # fmt: skip
        assert verdict.informational is dropped


def test_frame_selection() -> None:
    def turn(message: str, **kw: object) -> TurnInput:
        return TurnInput(agent_id="a", session_id="s", message=message, **kw)

    assert select_frame(turn("Pick a DB", frame="Decision")) == "decision"
    assert select_frame(turn("Pick a DB", signals={"frame": "debug"})) == "debug"
    assert select_frame(turn("Which DB should we use?")) == "question"
    assert select_frame(turn("Hello there")) == "conversation"
    assert deliberates("decision", FRAMES)
    assert not deliberates("task", FRAMES)


def test_draft_takes_the_first_paragraph_and_keeps_the_rest_as_reasoning() -> None:
    outcome = TurnOutcome(response_text=f"  {DECISION}\n\nWe compared three options.\nDetails.")
    description, reasoning = draft_decision(outcome)
    assert description == DECISION
    assert reasoning == "We compared three options.\nDetails."
    explicit = TurnOutcome(response_text="blah", decision_description=" Use Redis for caching. ")
    assert draft_decision(explicit) == ("Use Redis for caching.", None)


def test_draft_cuts_long_text_at_a_sentence() -> None:
    text = ("Use Redis for the cache. " * 40).strip()
    description, _ = draft_decision(TurnOutcome(response_text=text))
    assert len(description) <= 500
    assert description.endswith("cache.")
    assert len(summarise_message("word " * 200)) <= 201


def test_tool_result_and_outcome_validate() -> None:
    from memory_kernel import ValidationError

    with pytest.raises(ValidationError):
        ToolResult(tool_name=" ")
    with pytest.raises(ValidationError):
        TurnOutcome(response_text="ok", decision_confidence=2.0)
