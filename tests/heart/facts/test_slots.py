"""Pure slot view and alignment of statements, and the pair decisions built on them: the
classes of look-alikes that must never retire each other, whatever the weights say."""

from __future__ import annotations

import pytest

from memory_kernel.config import HeartConfig
from memory_kernel.heart.facts.frames import abbreviates, compare
from memory_kernel.heart.facts.normalise import features
from memory_kernel.heart.facts.pairs import shared_names, topic_anchor, typed_value_changed
from memory_kernel.heart.facts.reading import roles_exchanged, same_periods, same_reading
from memory_kernel.heart.facts.relation import (
    PairRelation,
    RelationThresholds,
    classify_pair,
    update_probability,
    veto,
)
from memory_kernel.heart.facts.slots import statement

CFG = HeartConfig()
T = RelationThresholds.from_config(CFG)


def test_numbers_after_citation_nouns_and_codes_are_identifiers() -> None:
    assert statement("Article 25 requires a DPIA.").identifiers == {"25"}
    assert statement("The tenant in unit 2B pays $1,400 a month.").identifiers == {"2b"}
    assert statement("p99 latency is 450 ms.").identifiers == {"p99"}
    # ... but an ordinal is a date and a version after "v" is the version's number.
    assert statement("Her dental is on the 17th.").identifiers == frozenset()
    assert statement("It was deprecated in v3.").identifiers == {"3"}


def test_a_code_is_read_whole_with_every_hyphened_part() -> None:
    backups = statement("Nightly backups are copied to ap-south-2.")
    assert backups.identifiers == {"ap-south-2"}
    assert "ap" not in backups.content and "south" not in backups.content


def test_a_number_after_the_number_sign_names_a_thing() -> None:
    merged = statement("MR #5120 landed on main.")
    assert merged.identifiers == {"5120"} and not merged.values
    assert statement("#5120 still needs a second approval").identifiers == {"5120"}


def test_after_a_citation_noun_only_a_code_a_number_or_capitals_name_a_thing() -> None:
    assert statement("We toured the castle on day two.").identifiers == {"2"}
    assert statement("We toured the castle on day 2.").identifiers == {"2"}
    assert statement("Boarding is at gate C.").identifiers == {"c"}
    assert statement("Phase III starts in May.").identifiers == {"iii"}
    # A lower-case word after one names nothing: "a week", "the platform", "level".
    assert statement("She is taking a week off.").identifiers == frozenset()
    assert statement("He joined the platform org.").identifiers == frozenset()
    assert statement("The launch slipped a week; new date is the 9th.").identifiers == frozenset()


def test_a_weekday_or_month_owning_a_noun_is_still_that_day() -> None:
    assert ("date", "june") in statement("June's bill is $130.").values
    assert ("day", "friday") in statement("Friday's standup is cancelled.").values


def test_values_carry_their_type() -> None:
    values = statement("Departure is now 2:15 p.m., the fare $1.2k, 20 minutes late.").values
    assert ("time", "14:15") in values and ("money", "$1200") in values
    assert ("duration", "20 minute") in values
    assert statement("12 min").value_keys() == statement("12 minutes").value_keys()


def test_an_ordinal_is_a_date_only_where_a_day_of_the_month_can_stand() -> None:
    for text in ("The vote is on the 21st.", "Rent is due on the second of March.",
                 "The meetup is every third Thursday."):  # fmt: skip
        assert any(kind == "date" for kind, _ in statement(text).values), text
    for text in ("My second car was a Volvo.", "We moved to the 4th floor."):
        assert {kind for kind, _ in statement(text).values} == {"rank"}, text


def test_an_ordinal_ranking_a_thing_ties_no_date_to_it() -> None:
    # Two first-person facts, one with a deadline and one with "my first job": the rank is
    # not a date replaced, so nothing ties them and nothing is retired.
    old = "I have to be out of the flat by April 3."
    new = "My first job out of school was at a bakery in Porto."
    for similarity in (0.3, 0.6, 0.9):
        assert _relation(old, new, similarity) is not PairRelation.UPDATE


def test_a_name_opening_one_sentence_is_the_name_the_other_gives() -> None:
    # The first word of a sentence is capitalised whatever it is: it counts as a name where
    # the other statement gives it as one.
    lead, moved = statement("Our tech lead is Priya Raman."), statement("Priya moved to Berlin.")
    assert shared_names(lead, moved) == {"priya"} == shared_names(moved, lead)
    assert topic_anchor(lead, moved) >= 1
    assert shared_names(statement("Deploys run on Fridays."), statement("Deploys are slow.")) == (
        frozenset()
    )


def test_a_clock_time_without_its_half_of_the_day_is_the_same_reading() -> None:
    # The tie "both speak of the speaker and a typed value was replaced" needs a value that
    # changed: "4:30" and "4:30pm" may be one reading; "7am" and "8am" are two.
    same = ("Our standup is at 4:30.", "The standup is at 4:30pm."), (
        "I eat dinner at 7:15.", "Dinner for me is at 7:15 p.m.")  # fmt: skip
    for old, new in same:
        assert not typed_value_changed(statement(old), statement(new)), (old, new)
    assert typed_value_changed(statement("The bakery opens at 7am."), statement("It opens at 8am."))
    assert typed_value_changed(statement("I wake at 6:45am."), statement("I wake at 5:45pm."))


def test_mood_question_list_item_and_goal() -> None:
    assert statement("Can you recommend a desk under $500?").question
    assert statement("Pete is bringing dessert too.").list_item
    assert not statement("The knee is still too sore to run.").list_item
    assert statement("Another goal this year is a half marathon.").listed == {"goal"}
    assert statement("My goal is to deadlift 300 pounds.").irrealis
    assert not statement("We're planning a trip to Croatia.").irrealis  # a plan can change


def test_alignment_classifies_what_differs() -> None:
    value = compare(statement("The queue holds 500 jobs."), statement("The queue holds 800 jobs."))
    assert value.value_only
    entity = compare(
        statement("The Austin office has 40 desks."), statement("The Boston office has 55 desks.")
    )
    assert entity.parallel and entity.entity and not entity.value_only
    moved = compare(
        statement("Ines leads the billing team."), statement("The billing team is headed by Ines.")
    )
    assert moved.moved > 0
    swapped = compare(
        statement("The user's favourite colour is green."),
        statement("The user's favourite colour is blue."),
    )
    assert swapped.parallel and swapped.moved == 0 and not swapped.same


@pytest.mark.parametrize(
    ("short", "words"),
    [("NHS", "national health service"), ("PRs", "pull requests"), ("k8s", "kubernetes"),
     ("S3", "simple storage service"), ("DB", "database"),
     ("MBA", "master of business administration")],
)  # fmt: skip
def test_abbreviations(short: str, words: str) -> None:
    assert abbreviates(short, words.split())


def test_abbreviation_needs_the_initials() -> None:
    assert not abbreviates("NHS", ["national", "rail", "service"])


def _relation(old: str, new: str, similarity: float = 0.7) -> PairRelation:
    return classify_pair(features(old), features(new), similarity, T).relation


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # Another identifier: a different article, unit, percentile, ticket.
        ("Article 25 requires data protection by design.",
         "Article 37 requires the designation of a data protection officer."),
        ("The tenant in unit 2B pays $1,400 a month.",
         "The tenant in unit 3A pays $1,550 a month."),
        ("p50 latency for search is 80 ms.", "p99 latency for search is 450 ms."),
        # Another holder in the same frame.
        ("The iOS app's crash-free rate is 99.2%.", "The Android app's crash-free rate is 98.7%."),
        ("The lower tier of GDPR fines is up to €10M or 2% of turnover.",
         "The upper tier of GDPR fines is up to €20M or 4% of turnover."),
        # Another attribute.
        ("I bench 185 pounds.", "I squat 245 pounds."),
        ("The bakery opens at 7am.", "The bakery closes at 3pm."),
        # A question is not a statement; a list item adds.
        ("Can you suggest soundbar options in the $100-$200 range?",
         "Can you suggest portable charger options in the $20-$50 range?"),
        ("Hannah is bringing dessert.", "Pete is bringing dessert too."),
        ("My daily supplements include vitamin D.", "My daily supplements include magnesium."),
        # A goal or hearsay beside a statement.
        ("My goal is to deadlift 300 pounds by summer.", "I currently deadlift 265 pounds."),
    ],
)  # fmt: skip
def test_look_alikes_are_never_updates(old: str, new: str) -> None:
    for similarity in (0.3, 0.6, 0.9):
        assert _relation(old, new, similarity) is not PairRelation.UPDATE
    assert update_probability(features(old), features(new), 0.6, T) < 0.5


def test_an_identifier_only_one_side_names_vetoes_nothing() -> None:
    # Left out, not contradicted: the newer statement need not repeat "Q2" or the ticket.
    pairs = [
        ("The Q2 board meeting is on June 4.", "The board meeting moved to June 11."),
        ("OPS-771 is blocked on the vendor.", "The vendor ticket is unblocked now."),
        ("I sit on floor 3 of the annex.", "They moved our team to the main building."),
    ]
    for old, new in pairs:
        assert veto(statement(old), statement(new)) is None


def test_one_taken_from_a_count_with_a_new_count_is_no_list_item() -> None:
    coop = statement("Nell keeps 6 ducks by the pond.")
    # One of them gone and the count left: the count changed, nothing was listed.
    assert veto(coop, statement("a fox took one of the ducks, down to 5")) is None
    # One of them named, with the count they share or a value of another kind: a list item.
    listed = "a list item adds, it does not replace"
    assert veto(coop, statement("One of the 6 ducks is lame.")) == listed
    assert veto(coop, statement("One of the ducks cost $40.")) == listed
    assert veto(statement("Nell keeps ducks."), statement("one of the ducks left, 5 now")) == listed


def test_two_identifiers_contrast_unless_the_newer_announces_a_change() -> None:
    article = ("Article 6 covers lawful processing.", "Article 9 covers health data.")
    assert veto(statement(article[0]), statement(article[1])) == "different identifiers"
    # The identifier is the value: a code, a host, a password replaced.
    for old, new in [
        ("The guest wifi password is maple31.", "IT rotated it this morning, it's cedar58 now."),
        ("The build agent is ci-runner-04.", "We switched the build agent to ci-runner-09."),
    ]:
        assert veto(statement(old), statement(new)) is None


def test_a_value_changed_in_the_same_frame_is_an_update_at_any_similarity() -> None:
    old, new = "Daily active users peaked in December.", "Daily active users peaked in August."
    assert _relation(old, new, 0.2) is PairRelation.UPDATE
    assert update_probability(features(old), features(new), 0.2, T) == 1.0


def test_a_word_swapped_in_place_is_never_a_duplicate() -> None:
    old, new = (
        "Sprint planning is on Wednesday mornings.",
        "Sprint planning is on Wednesday afternoons.",
    )
    assert _relation(old, new, 0.95) is PairRelation.UNRELATED


def test_the_same_words_of_another_period_named_from_now_are_never_the_same() -> None:
    old, new = "Grandpa is retiring this year.", "Grandpa retired last year."
    for similarity in (0.6, 0.95):
        assert _relation(old, new, similarity) is not PairRelation.DUPLICATE
    moved = ("The roof was redone last summer.", "Last summer the roof was redone.")
    assert _relation(*moved) is PairRelation.DUPLICATE
    # One period in two words; and "the last week of" a quarter is no period from now.
    assert same_periods("Our son starts nursery this autumn.", "Our son begins nursery this fall.")
    assert same_periods(
        "Deploys freeze in the last week of the quarter.",
        "Deploys freeze in each quarter's final week.",
    )


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # The same content words, another scope.
        ("All of the user's cousins live in Ohio.", "Some of the user's cousins live in Ohio."),
        ("I always cycle to the office.", "I sometimes cycle to the office."),
        # One more item of a list.
        ("I packed the charger for the trip.", "I packed the charger and adapter for the trip."),
        # Who does what to whom, exchanged.
        ("Lena owes me $40 for the concert tickets.", "I owe Lena $40 for the concert tickets."),
        ("My aunt taught me to knit.", "I taught my aunt to knit."),
        ("The parrot is scared of the kitten.", "The kitten is scared of the parrot."),
        # A thought, a possibility or a wish beside the thing done.
        ("I'm thinking about selling my car.", "I sold my car."),
        ("The user might adopt a greyhound.", "The user is adopting a greyhound."),
        ("I'd like to learn the cello.", "I'm learning the cello."),
    ],
)  # fmt: skip
def test_the_same_words_read_another_way_are_never_the_same(old: str, new: str) -> None:
    for similarity in (0.6, 0.95):
        assert _relation(old, new, similarity) is not PairRelation.DUPLICATE


def test_what_reads_alike_still_merges() -> None:
    # Each only in word order or with one participant joined to the other.
    for old, new in [
        ("Every morning I cycle to the office.", "I cycle to the office each morning."),
        ("My partner and I share a car.", "I share a car with my partner."),
        ("The team is led by Ines.", "Ines leads the team."),
    ]:
        assert same_reading(old, new), (old, new)
    assert not roles_exchanged(
        "The standup is at 9:30 on Mondays.", "On Mondays, the standup is at 9:30."
    )


def test_reordered_and_abbreviated_restatements_are_duplicates() -> None:
    reordered = (
        "Postgres and Redis are both self-hosted.",
        "Both Redis and Postgres are self-hosted.",
    )
    assert _relation(*reordered) is PairRelation.DUPLICATE
    abbreviated = (
        "The user's partner works for the National Health Service.",
        "The user's partner works for the NHS.",
    )
    assert _relation(*abbreviated) is PairRelation.DUPLICATE


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # A numeronym whose last letter is an "s" (not a plural).
        ("The cluster is managed with Kubernetes.", "The cluster is managed with k8s."),
        # One word of a span abbreviated, the next one shortened.
        ("The warehouse is Snowflake 8 and the repository is GitHub.",
         "The warehouse is Snowflake 8 and the repo is GitHub."),
        ("The database is MariaDB 11.", "The DB is MariaDB 11."),
    ],
)  # fmt: skip
def test_a_word_abbreviated_inside_a_span_is_the_same_word(old: str, new: str) -> None:
    assert compare(statement(old), statement(new)).same
    assert _relation(old, new) is PairRelation.DUPLICATE


def test_an_abbreviation_of_another_word_is_not_the_same_word() -> None:
    old, new = "The database is MariaDB 11.", "The CDN is MariaDB 11."
    assert not compare(statement(old), statement(new)).same
