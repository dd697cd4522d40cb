"""Layer 1, the informational filter, plus frame selection and decision drafting (pure)."""

from __future__ import annotations

import pytest

from memory_kernel.cognitive.draft import draft_decision, summarise_message
from memory_kernel.cognitive.frames import deliberates, select_frame
from memory_kernel.cognitive.informational import InfoFamily, classify_response
from memory_kernel.models.turns import ToolResult, TurnInput, TurnOutcome

FRAMES = frozenset({"decision", "debug"})
DECISION = "We'll use PostgreSQL rather than a separate vector store, because it keeps one system."


def _family(
    text: str, *, frame: str = "decision", tools: tuple[str, ...] = ()
) -> InfoFamily | None:
    verdict = classify_response(text, frame=frame, tool_names=tools, deliberation_frames=FRAMES)
    assert verdict.informational == (verdict.family is not None)
    return verdict.family


@pytest.mark.parametrize("frame", ["conversation", "question", "creative", "task"])
def test_non_deliberating_frames_are_informational(frame: str) -> None:
    assert _family(DECISION, frame=frame) is InfoFamily.FRAME


@pytest.mark.parametrize("frame", ["decision", "debug"])
def test_a_decision_passes_in_deliberating_frames(frame: str) -> None:
    assert _family(DECISION, frame=frame) is None


def test_record_decision_bypasses_the_filter() -> None:
    assert _family("Done! Pushed to main.", frame="task", tools=("record_decision",)) is None


@pytest.mark.parametrize(
    ("text", "family"),
    [
        ("Done! ✅ All green.", InfoFamily.COMPLETION),
        ("All done, the job finished cleanly.", InfoFamily.COMPLETION),
        ("On it! 🚀", InfoFamily.COMPLETION),
        ("Branch pushed to origin, waiting on CI.", InfoFamily.COMPLETION),
        ("Review complete, nothing blocking.", InfoFamily.COMPLETION),
        ("The task is running; results in ten minutes.", InfoFamily.COMPLETION),
        ("I've updated the config and restarted the service.", InfoFamily.COMPLETION),
        ("Done. The deploy went through.", InfoFamily.COMPLETION),
        ("Now let me look at the failing test.", InfoFamily.TRANSITION),
        ("OK, let me check the logs first.", InfoFamily.TRANSITION),
        ("I read the diff. Next, I'll run the linters.", InfoFamily.TRANSITION),
        ("Moving on to the API layer.", InfoFamily.TRANSITION),
        ("Alright, starting with the schema.", InfoFamily.TRANSITION),
        ("I'll start by reading the config.", InfoFamily.TRANSITION),
        ("Here's the result of the benchmark run: p99 40 ms.", InfoFamily.REPORT),
        ("Here are the results: 12 rows.", InfoFamily.REPORT),
        ("Opened PR #1234 for the refactor.", InfoFamily.REPORT),
        ("PR created for the docs fix.", InfoFamily.REPORT),
        ("Spec scores: clarity 4/5.", InfoFamily.REPORT),
        ("Current status: waiting on review.", InfoFamily.STATUS),
        ("Available tools: bash, git, sql.", InfoFamily.STATUS),
        ("I remember you like short answers.", InfoFamily.STATUS),
        ("My memory says the deploy was Tuesday.", InfoFamily.STATUS),
        ("Here’s my full live status: 3 open.", InfoFamily.STATUS),  # curly apostrophe
        ("Thanks, that helps a lot!", InfoFamily.ACKNOWLEDGEMENT),
        ("Good morning! How was the weekend?", InfoFamily.ACKNOWLEDGEMENT),
        ("I encountered an error processing your request.", InfoFamily.ERROR),
        ("Should we use Redis or Memcached? Which one do you run today?", InfoFamily.QUESTION),
        ("   ", InfoFamily.EMPTY),
    ],
)
def test_pattern_families(text: str, family: InfoFamily) -> None:
    assert _family(text) is family


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
    ],
)
def test_decisions_are_not_matched(text: str) -> None:
    assert _family(text) is None


def test_action_report_needs_tools_and_two_markers() -> None:
    report = "Created the index, updated the stats and committed the migration."
    assert _family(report, tools=("sql",)) is InfoFamily.ACTION_REPORT
    one_marker = "Root cause is pool exhaustion; I fixed nothing yet and will move the query out."
    assert _family(one_marker, tools=("sql",)) is None
    # Markers past the first 300 characters do not count.
    late = DECISION + " " + "x " * 150 + "created updated merged"
    assert _family(late, tools=("git",)) is None


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
