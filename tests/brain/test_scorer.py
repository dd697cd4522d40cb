"""The decision classifier: its features, its fit and its weights files (pure)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory_kernel import ConfigError, ValidationError
from memory_kernel.brain.scorer import (
    NO_DECISION_CUE,
    DecisionScorer,
    default_scorer,
    fit,
    load_scorer,
)
from memory_kernel.brain.speech import (
    DECISION,
    FEATURES,
    MAX_CHARS,
    STYLE,
    feature_names,
    features,
)
from memory_kernel.cognitive.informational import InfoFamily

TEXTS = [
    "",
    "   ",
    "Okay.",
    "We'll use PostgreSQL rather than MySQL, because we already run it.",
    "Here's the status:\n- 3 open\n- 2 blocked\n- `api` green\n\n1. one\n2. two",
    "Let me check. " * 200,
    "✅ Décidé : on garde la version 3 jusqu'en mars, sinon la migration casse.",
    "I've merged it? Did it work? 404 500 200 201 `x` `y` `z` `w`",
]


def test_feature_names_are_unique_and_families_are_layer_1_families() -> None:
    names = feature_names()
    assert len(names) == len(set(names)) == len(FEATURES)
    families = {f.family for f in FEATURES} - {DECISION, STYLE}
    assert families <= {f.value for f in InfoFamily}


@pytest.mark.parametrize("text", TEXTS)
def test_every_feature_is_in_the_unit_interval(text: str) -> None:
    values = features(text)
    assert len(values) == len(FEATURES)
    assert all(0.0 <= v <= 1.0 for v in values)


def _value(text: str, name: str) -> float:
    return features(text)[feature_names().index(name)]


@pytest.mark.parametrize(
    ("name", "fires", "quiet"),
    [
        ("commitment", "We'll keep the old parser.", "We kept the old parser."),
        ("commitment", "I'm switching the client to httpx.", "I'm checking the client."),
        ("commitment", "Let's ship it on Friday.", "Let's see the numbers first."),
        ("contrast", "We use random effects, not fixed effects.", "We use random effects."),
        ("contrast", "Use gRPC rather than REST.", "Use gRPC for it."),
        ("transition", "Let me check the logs.", "The logs say it timed out."),
        ("transition", "I'll check the logs.", "I'll rotate the logs weekly."),
        ("recall", "I recall that we moved it.", "We moved it."),
        ("past_lead", "Repo pulled — now at 3 new commits.", "Repo is behind by 3 commits."),
        ("imperative", "Use UUIDv7 for new keys.", "UUIDv7 is used for new keys."),
        ("gerund_lead", "Switching to httpx now.", "Checking httpx now."),
        ("gerund_lead", "Moving the standup to 10.", "Morning! Standup is at 10."),
        ("gerund_lead", "Dropping the cache layer.", "Nothing new on the cache layer."),
        ("gerund_lead", "Pinning numpy below 2.", "Waiting on numpy 2 wheels."),
        ("commitment", "Fine, we skip the dark mode toggle for v1.", "There we go!"),
        # Comparing, measuring, verifying: the work in progress, as "Checking…" is.
        (
            "gerund_lead",
            "Switching to the inland route.",
            "Comparing the two routes: one is longer.",
        ),
        # A choice after a report of the work.
        (
            "later_choice",
            "Refactored the loader. Went with pydantic-settings over hand-written parsing.",
            "Refactored the loader. The tests pass on every platform.",
        ),
        (
            "later_choice",
            "Audit done. I'd upgrade lodash first, since it is exposed.",
            "Audit done. The docs recommend upgrading lodash first.",
        ),
        # A reason or a contrast counts where someone acts or a course is set; in a sentence
        # that explains how things are, it chooses nothing.
        (
            "contrast",
            "We'll key messages by customer, not by order.",
            "Kafka orders messages within a partition, not across a topic.",
        ),
        (
            "rationale",
            "Use the 14-inch, because you work at a desk.",
            "The layer stays smaller, because pip keeps no cache.",
        ),
    ],
)
def test_features_fire_on_their_speech_act(name: str, fires: str, quiet: str) -> None:
    assert _value(fires, name) > _value(quiet, name)


@pytest.mark.parametrize(
    ("fires", "quiet"),
    [
        # A condition before the choice: nothing is committed to yet.
        (
            "We should move the nightly export to Parquet; the CSVs are too slow.",
            "If the CSVs stay this slow, we should move the nightly export to Parquet.",
        ),
        # A possibility or a generalisation before it.
        ("I'd take the train over the bus here.", "Most people would take the train over the bus."),
        ("We're picking the 40-litre pack for this trip.", "Maybe we pick the 40-litre pack?"),
        # A memory before the choice holds it back; a reason quoting the listener after it
        # does not.
        (
            "Let's take the ferry at 9, since you said you'd rather be home by six.",
            "You said last week we'd take the ferry at 9.",
        ),
        # A hypothesis before it: a diagnosis, not a course chosen.
        (
            "The scheduler is using UTC instead of the team's timezone; switching it now.",
            "My theory is the scheduler uses UTC instead of the team's timezone.",
        ),
        ("We're going with the smaller bearings.", "I suspect they went with smaller bearings."),
        # An announced step before it: the choice waits for the step.
        (
            "We'll pick the cheaper venue; the other one has no parking.",
            "Let me check both venues' prices before we pick one.",
        ),
        (
            "My recommendation: the quarterly plan over the monthly one.",
            "I'll read the contract and come back with a recommendation.",
        ),
        (
            "I'll go ahead and book the hall instead of the barn.",
            "I'll check the hall, then we pick.",
        ),
        # Choosing a step of the work announces the step.
        ("I decided to drop the nightly export.", "I decided to check the export logs first."),
        # Someone else's choice, reported.
        ("I went with the oak shelves for the hallway.", "The builder went with the oak shelves."),
        ("Decision: we pay the card off first.", "The bank's decision came through on Monday."),
        # Advice counts when the speaker gives it, and a choice when it is made, not offered.
        (
            "I recommend setting requests on every container.",
            "The Kubernetes docs recommend setting requests on every container.",
        ),
        ("Here's my recommendation: Germany first.", "I'd normally recommend one here."),
        ("You picked the 14-inch laptop.", "Happy to help you pick a laptop!"),
        # A possessive names the chooser only right before the choice ("your pick"); "your
        # sister chose" is someone else's choice.
        ("Your pick, then: the beach house.", "Noted that your sister chose the beach house."),
    ],
)
def test_the_lead_choice_is_the_speakers_and_committed(fires: str, quiet: str) -> None:
    assert _value(fires, "lead_choice") == 1.0
    assert _value(quiet, "lead_choice") == 0.0


def test_only_the_first_screen_is_read() -> None:
    head = "Let me check the logs first. "
    padding = "x" * (MAX_CHARS - len(head))
    assert features(head + padding + " We'll use Redis rather than Memcached.") == features(
        head + padding
    )


def test_a_colon_opens_a_clause_of_its_own() -> None:
    assert _value("My recommendation: use Redis for it.", "imperative") == 1.0


def test_fit_is_deterministic_and_learns_the_direction() -> None:
    decisions = [
        "We'll use Redis rather than Memcached, because we already run it.",
        "Let's keep the monorepo instead of splitting it, since CI stays one pipeline.",
        "I'm switching the client to httpx so we can go async later.",
    ]
    noise = ["Done! ✅ All green.", "Let me check the logs first.", "Thanks, that helps!"]
    labels = [True] * 3 + [False] * 3
    first = fit(decisions + noise, labels, trained_on={"files": ["toy"]})
    second = fit(decisions + noise, labels, trained_on={"files": ["toy"]})
    assert first == second
    assert all(first.probability(t) > 0.5 for t in decisions)
    assert all(first.probability(t) < 0.5 for t in noise)
    assert first.trained_on == {"rows": 6, "decisions": 3, "l2": 1.0, "files": ["toy"]}
    # A stronger penalty pulls every weight towards zero.
    strong = fit(decisions + noise, labels, l2=100.0)
    assert sum(map(abs, strong.weights.values())) < sum(map(abs, first.weights.values()))


def test_fit_refuses_mismatched_input() -> None:
    with pytest.raises(ValidationError, match="as many labels"):
        fit(["a", "b"], [True])
    with pytest.raises(ValidationError, match="at least one"):
        fit([], [])


def test_json_round_trip_and_a_file(tmp_path: Path) -> None:
    scorer = default_scorer()
    again = DecisionScorer.from_json(json.loads(json.dumps(scorer.to_json())))
    assert again.probability("We'll ship on Friday.") == pytest.approx(
        scorer.probability("We'll ship on Friday."), abs=1e-5
    )
    path = tmp_path / "w.json"
    path.write_text(json.dumps(scorer.to_json()), encoding="utf-8")
    assert load_scorer(path).weights.keys() == scorer.weights.keys()
    assert load_scorer(None) is default_scorer()


def test_packaged_weights_say_what_they_were_trained_on() -> None:
    files = {f["file"]: f["rows"] for f in default_scorer().trained_on["files"]}
    assert files == {"decision_gate_dev.jsonl": 40, "decision_gate_authored_dev.jsonl": 110}


def test_bad_weights_are_config_errors(tmp_path: Path) -> None:
    weights = dict.fromkeys(feature_names(), 0.0)
    with pytest.raises(ConfigError, match="missing"):
        DecisionScorer({k: v for k, v in weights.items() if k != "contrast"}, 0.0)
    with pytest.raises(ConfigError, match="unknown"):
        DecisionScorer({**weights, "vibes": 1.0}, 0.0)
    with pytest.raises(ConfigError, match="malformed"):
        DecisionScorer.from_json({"weights": weights})  # no bias
    with pytest.raises(ConfigError, match="cannot read"):
        load_scorer(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{", encoding="utf-8")
    with pytest.raises(ConfigError, match="cannot read"):
        load_scorer(tmp_path / "bad.json")


def test_the_family_is_the_strongest_push_down() -> None:
    neutral = DecisionScorer(dict.fromkeys(feature_names(), 0.0), 0.0)
    assert neutral.score("Let me check.").family == NO_DECISION_CUE
    assert neutral.score("Let me check.").probability == 0.5
    weights = {**dict.fromkeys(feature_names(), 0.0), "transition": -2.0, "recall": -1.0}
    scored = DecisionScorer(weights, 0.0).score("I recall it. Let me check.")
    assert scored.family == "transition" and scored.probability < 0.5
