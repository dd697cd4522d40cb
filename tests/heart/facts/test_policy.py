"""Pure fact policy: features, meaning flips, pair relations, admission, learn plans —
no database."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from memory_kernel.config import HeartConfig
from memory_kernel.heart.facts.admission import AdmissionReason, admit_fact
from memory_kernel.heart.facts.admission_features import admission_features, possessive
from memory_kernel.heart.facts.normalise import features, normalise_content, stem, value_of
from memory_kernel.heart.facts.polarity import flip_reason
from memory_kernel.heart.facts.policy import Candidate, NewFact, plan_learn, reinforced
from memory_kernel.heart.facts.relation import (
    PairRelation,
    RelationThresholds,
    classify_pair,
    update_probability,
)
from memory_kernel.models.facts import LearnAction

CFG = HeartConfig()
T = RelationThresholds.from_config(CFG)
NOW = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("token", "value"),
    [("07:05", "7:05"), ("7:05", "7:05"), ("$1,200", "$1200"), ("12.50", "12.5"),
     ("30%", "30%"), ("five", "5"), ("twice", "2"), ("3rd", "3th"), ("june", "june"),
     ("table", None), ("may", None)],
)  # fmt: skip
def test_values_are_normalised(token: str, value: str | None) -> None:
    assert value_of(token) == value


def test_stems_match_inflections() -> None:
    assert stem("owned") == stem("owns") == stem("own")
    assert stem("moved") == stem("move")
    assert stem("classes") == stem("class")
    assert stem("running") == stem("run")


def test_normalised_content_ignores_case_and_punctuation() -> None:
    assert normalise_content("The  Cat sat!") == normalise_content("the cat sat")


@pytest.mark.parametrize(
    ("a", "b"),
    [("The alarm is on.", "The alarm is off."),
     ("The export job succeeded.", "The export job failed."),
     ("Sam likes the new layout.", "Sam does not like the new layout."),
     ("Mia ranks tea over coffee.", "Mia ranks coffee over tea."),
     # A negating prefix on any word, not only the listed opposites.
     ("The cache flush is synchronous.", "The cache flush is asynchronous."),
     ("The March invoice is paid.", "The March invoice is unpaid."),
     ("The retry path is blocking.", "The retry path is non-blocking."),
     # Time bounds reversed.
     ("Ravi worked in Porto until 2021.", "Ravi has worked in Porto since 2021."),
     ("Backups run before the nightly deploy.", "Backups run after the nightly deploy.")],
)  # fmt: skip
def test_flips_are_detected(a: str, b: str) -> None:
    assert flip_reason(features(a), features(b)) is not None


def test_paraphrase_is_not_a_flip() -> None:
    assert flip_reason(features("Sam likes tea."), features("Sam really likes tea.")) is None
    # A short word inside a longer one is no negation of it ("insight" is no "in-sight").
    assert flip_reason(features("Her insight helped."), features("Her sight helped.")) is None


def test_a_list_item_beside_a_statement_is_never_its_duplicate() -> None:
    old, new = "Noa is allergic to shellfish.", "The doctor says Noa is allergic to kiwi as well."
    for similarity in (0.5, 0.7, 0.9):
        assert _relation(old, new, similarity) is not PairRelation.DUPLICATE


def _relation(old: str, new: str, similarity: float) -> PairRelation:
    return classify_pair(features(old), features(new), similarity, T).relation


def test_a_change_to_someone_the_older_fact_does_not_name_is_never_its_duplicate() -> None:
    old = "Priya runs the quarterly audit."
    new = "The quarterly audit is Tomasz's now, Priya moved over to payroll."
    for similarity in (0.5, 0.7, 0.9):
        assert _relation(old, new, similarity) is not PairRelation.DUPLICATE
    # Without a change announced, or naming no one new, a restatement may still merge.
    restated = "The quarterly audit is run by Priya."
    assert _relation(old, restated, 0.9) is PairRelation.DUPLICATE


def test_changed_number_is_an_update_never_a_duplicate() -> None:
    assert _relation("The queue holds 500 jobs.", "The queue holds 800 jobs.", 0.9) == (
        PairRelation.UPDATE
    )


def test_a_quantity_of_another_period_is_a_series_not_an_update() -> None:
    old = "In March the water bill came to $61."
    assert _relation(old, "In April the water bill came to $74.", 0.8) is PairRelation.UNRELATED
    assert _relation(old, "In March the water bill came to $74.", 0.8) is PairRelation.UPDATE
    # The newer announcing the change: the period says when the new value began.
    announced = "As of April the water bill came to $74."
    assert _relation(old, announced, 0.8) is PairRelation.UPDATE


def test_same_time_written_differently_is_a_duplicate() -> None:
    old, new = "The sync starts at 09:00 UTC.", "The sync starts at 9:00 UTC."
    assert _relation(old, new, 0.8) is PairRelation.DUPLICATE


def test_swapped_slot_value_is_an_update() -> None:
    old, new = "The billing API is owned by team Red.", "The billing API is owned by team Blue."
    assert _relation(old, new, 0.8) is PairRelation.UPDATE


def test_opposite_meaning_is_a_contradiction() -> None:
    old, new = "Dark mode is enabled for admins.", "Dark mode is disabled for admins."
    assert _relation(old, new, 0.85) is PairRelation.CONTRADICTION


def test_same_head_with_change_marker_is_an_update_at_low_similarity() -> None:
    old, new = "Tom rents a flat in Leeds.", "Tom now rents a house in York."
    assert _relation(old, new, 0.3) is PairRelation.UPDATE


@pytest.mark.parametrize(
    ("old", "new"),
    [("Check-in at the Spruce Hollow cabin is 4 pm.",
      "Checkout at Spruce Hollow is 10 am sharp, the host was very clear about that."),
     ("Subscriptions on my card: Netflix at $15.49/mo.",
      "Another one on my card is Spotify Family at $16.99/mo."),
     ("There are 48 plots at the Fenwick Lane community garden.",
      "12 of the Fenwick Lane plots are raised beds for wheelchair access.")],
)  # fmt: skip
def test_the_learned_update_scorer_retires_nothing_at_write_time(old: str, new: str) -> None:
    """Look-alikes it rates 0.9 and more (probe W): another attribute, another item of a
    list, a part of the whole. Only the rules retire; recall orders the rest."""
    assert update_probability(features(old), features(new), 0.5, T) >= 0.9
    assert _relation(old, new, 0.5) is PairRelation.UNRELATED


def test_added_detail_is_neither_duplicate_nor_update() -> None:
    old, new = "Ana visited Lisbon.", "Ana visited Lisbon in 2019 with her team."
    assert _relation(old, new, 0.7) is PairRelation.UNRELATED


def test_dissimilar_is_unrelated() -> None:
    assert _relation("Ana visited Lisbon.", "The router needs a firmware update.", 0.05) is (
        PairRelation.UNRELATED
    )


@pytest.mark.parametrize(
    ("text", "reason"),
    [("Hi there!", AdmissionReason.GREETING), ("Thanks, sounds great.", AdmissionReason.GREETING),
     ("Stuff happened.", AdmissionReason.VAGUE),
     ("We chatted about things.", AdmissionReason.VAGUE),
     ("Honesty is important.", AdmissionReason.PLATITUDE),
     ("Python is a programming language.", AdmissionReason.UNIVERSAL),
     ("Cats are animals.", AdmissionReason.UNIVERSAL), ("...", AdmissionReason.NO_CONTENT),
     # Thanks, greetings, laughter with nothing particular beside them.
     ("Thank you so much, you've been amazing!", AdmissionReason.GREETING),
     ("lol my tea went cold again", AdmissionReason.GREETING),
     ("Hey! Hope your weekend went well.", AdmissionReason.GREETING),
     # "I" after an interjection is no name, so nothing particular stands beside it.
     ("Ugh, I am so done with this week.", AdmissionReason.GREETING)],
)  # fmt: skip
def test_admission_rejects_noise(text: str, reason: AdmissionReason) -> None:
    decision = admit_fact(text)
    assert not decision.admitted
    assert decision.reason is reason


@pytest.mark.parametrize(
    "text",
    ["Noor's build machine has 64 GB of RAM.", "Our on-call rotation changes on Mondays.",
     "I am vegetarian.", "The billing export runs at 04:00 UTC.", "Kai prefers async reviews.",
     # A greeting beside something particular: the fact stays.
     "Hey, my new desk number is 4B-112.", "Thanks - Priya's flight lands at 6:40 pm.",
     # An interjection that is only a filler is no chatter.
     "oh and my son is allergic to sesame",
     # One word and a figure that says what it measures.
     "Retro is at 4:15.", "Parking is $14 a day.",
     # "lot" and "bit" are vague only as a quantity ("a lot of", "a bit").
     "Visitors park in the gravel lot behind the barn, by the red gate."],
)  # fmt: skip
def test_admission_keeps_specific_facts(text: str) -> None:
    assert admit_fact(text).admitted


@pytest.mark.parametrize(
    ("said", "written"),
    [("I'm allergic to penicillin.", "The user is allergic to penicillin."),
     ("I hate cilantro.", "The user hates cilantro."),
     ("I work as a nurse.", "The user works as a nurse."),
     ("I'm vegetarian.", "The user is vegetarian."),
     ("I play the cello.", "The user plays the cello."),
     # The user's role or trait is what a person is, as "Omar is a dentist": no definition.
     ("I'm a teacher.", "The user is a teacher."),
     ("I'm a night owl.", "The user is a night owl."),
     ("I'm the tech lead for payments.", "The user is the tech lead for payments.")],
)  # fmt: skip
def test_the_user_as_holder_anchors_a_statement_as_i_does(said: str, written: str) -> None:
    """The extractor writes "I" as "The user": the short statement it makes of a first-person
    one is admitted like the statement itself (it was rejected as not specific)."""
    assert admit_fact(said).admitted
    assert admit_fact(written).admitted


@pytest.mark.parametrize(
    "text",
    ["Tom left the company.", "Noor got the job.", "Farah now owns the dbt project.",
     "Marcus hates olives.", "Jess is already making a spreadsheet.", "Omar is a dentist.",
     "Ines is the tech lead for mobile."],
)  # fmt: skip
def test_a_statement_about_a_named_person_is_kept(text: str) -> None:
    """A name is told by its verb: a past form, a verb after an adverb, a name in -s with a
    singular verb (each was read as a common noun and rejected as universal knowledge), and
    a name with a role is no definition."""
    assert admit_fact(text).admitted


@pytest.mark.parametrize(
    ("text", "named"),
    [("Tom left the company.", 1.0), ("Marcus hates olives.", 1.0), ("Cats are animals.", 0.0),
     ("Sellers agreed to the credit.", 0.0), ("Inspection report is back.", 0.0)],
)  # fmt: skip
def test_a_word_in_s_is_a_name_only_before_a_singular_verb(text: str, named: float) -> None:
    assert admission_features(text)["named_subject"] == named


@pytest.mark.parametrize(
    "text", ["The user is hungry.", "The user is on vacation.", "The user is so tired today."]
)
def test_a_passing_state_of_the_user_is_not_kept(text: str) -> None:
    assert not admit_fact(text).admitted


@pytest.mark.parametrize(
    "text", ["The user is a person.", "The user is an adult.", "The user is a teacher?",
             "The user is a bit of a night owl, maybe."],
)  # fmt: skip
def test_a_role_that_says_only_someone_or_is_vague_asked_or_hedged_is_no_role(text: str) -> None:
    assert not admit_fact(text).admitted


@pytest.mark.parametrize(
    "text",
    ["I went to the dentist yesterday.", "Headcount today is 210.",
     "Farah now owns the dbt project.", "The user currently lives in Leeds."],
)  # fmt: skip
def test_a_day_or_now_marks_an_event_or_the_value_that_holds(text: str) -> None:
    assert admit_fact(text).admitted


@pytest.mark.parametrize(
    "text", ["It's important to back up your data.", "That's the plan.", "She's a dentist.",
             "Let's ship it on Friday."],
)  # fmt: skip
def test_a_contraction_of_a_pronoun_is_no_name(text: str) -> None:
    """ "Priya's" opens with a name; "It's", "That's", "She's" and "Let's" do not (every
    contraction was read as a possessive name), nor with a bare noun."""
    features = admission_features(text)
    assert features["named_subject"] == 0.0 and features["bare_subject"] == 0.0
    assert admission_features("Priya's flight lands at 6:40 pm.")["named_subject"] == 1.0


def test_an_interjection_is_no_name() -> None:
    assert admission_features("Mateo, my nephew, starts school in May.")["named_subject"] == 1.0
    assert admission_features("Sorry, I lost the thread there.")["named_subject"] == 0.0


def test_a_contraction_is_no_possessive() -> None:
    assert possessive("priya's") and possessive("app's")
    assert not any(possessive(w) for w in ("that's", "it's", "let's", "you're", "don't"))


def test_explicit_bypasses_the_gate() -> None:
    assert admit_fact("Hello!", explicit=True).reason is AdmissionReason.EXPLICIT


def test_reinforcement_grows_asymptotically() -> None:
    assert reinforced(0.7) == pytest.approx(0.715)
    assert reinforced(0.7, 2) == pytest.approx(0.715 + 0.05 * (1 - 0.715))
    assert reinforced(0.99, 100) < 1.0


def _cand(text: str, subject: str | None, sim: float | None) -> Candidate:
    return Candidate(uuid.uuid4(), features(text), subject, sim, NOW)


def test_plan_same_subject_supersedes_all_and_ignores_similarity() -> None:
    olds = [_cand("006 is planned", "006 status", None), _cand("006 draft", "006 status", 0.1)]
    plan = plan_learn(NewFact(features("006 is shipped"), "006 status"), olds, T)
    assert plan.action is LearnAction.SUPERSEDED
    assert {r.id for r in plan.supersede} == {c.id for c in olds}


def test_plan_same_subject_duplicate_reinforces() -> None:
    old = _cand("006 is shipped.", "006 status", 0.99)
    plan = plan_learn(NewFact(features("006 is shipped"), "006 status"), [old], T)
    assert plan.action is LearnAction.REINFORCED
    assert plan.reinforce == old.id


def test_plan_different_subjects_are_never_merged_or_replaced() -> None:
    old = _cand("The limit is 100.", "api limit", 0.95)
    plan = plan_learn(NewFact(features("The limit is 200."), "disk limit"), [old], T)
    assert plan.action is LearnAction.ADDED


def test_plan_without_candidates_adds() -> None:
    assert plan_learn(NewFact(features("x y z"), None), [], T).action is LearnAction.ADDED
