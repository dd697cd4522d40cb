"""Read-time resolution with the query: the slot a question asks about (question words,
not rows), the rules that still veto, and the search that shows the newer value first."""

from __future__ import annotations

import uuid

import pytest

from memory_kernel import MemoryKernel
from memory_kernel.config import HeartConfig
from memory_kernel.heart.facts.normalise import features
from memory_kernel.heart.facts.query_slot import (
    READ_FEATURES,
    answers,
    no_asked_value,
    query_features,
    query_view,
)
from memory_kernel.heart.facts.read_resolution import (
    SEARCH_POOL,
    QueryContext,
    SlotJudge,
    kind_crowd,
    query_tied,
    read_judge,
    read_probability,
    read_ruled,
    tied_by_kind_only,
)
from memory_kernel.heart.facts.relation import RelationThresholds
from memory_kernel.heart.facts.scorers import load_scorers
from memory_kernel.heart.facts.slots import statement
from memory_kernel.models.facts import FactInput, LearnAction
from memory_kernel.testing import FrozenClock


@pytest.mark.parametrize(
    ("query", "kind"),
    [
        ("how many chairs are in the attic", "number"),
        ("how much does the gym membership cost", "money"),
        ("what time does the ferry leave", "time"),
        ("which day is bin collection", "day"),
        ("how long is the warranty", "duration"),
        ("who is the landlord", "name"),
        ("which version of Terraform do we pin", "number"),
        ("what is our monthly grocery budget", "money"),  # modifiers before the attribute
        ("what is the status of the roof repair", "state"),
        ("is the dishwasher still leaking", "state"),  # a yes/no question asks for a state
    ],
)
def test_a_question_word_names_the_kind_of_value_asked_for(query: str, kind: str) -> None:
    assert kind in query_view(query).asked


def test_the_query_keeps_its_content_words_not_its_question_words() -> None:
    view = query_view("what time does the ferry leave")
    assert "ferri" in view.content or "ferry" in view.content
    assert not {"what", "time", "does"} & view.content


def test_two_facts_answering_the_asked_kind_are_tied_by_the_query() -> None:
    query = query_view("what time does the ferry leave")
    old, new = statement("The ferry leaves at 7:40."), statement("Departure is 8:05 from May.")
    assert answers(query, old) and answers(query, new)
    assert query_tied(query, old, new)
    unrelated = statement("My cousin plays the cello.")
    assert not query_tied(query, old, unrelated)


def test_a_state_question_is_answered_by_every_statement_about_its_subject() -> None:
    query = query_view("is the dishwasher still leaking")
    old = statement("The dishwasher leaks a little every cycle.")
    new = statement("The plumber replaced the seal, so the dishwasher is dry now.")
    other = statement("The oven takes ten minutes to heat up.")
    assert answers(query, old) and answers(query, new) and not answers(query, other)
    assert query_features(query, old, new, 0.0, 0.0)["q_state"] == 1.0
    assert query_features(query, old, other, 0.0, 0.0)["q_state"] == 0.0
    numeric = query_view("how many dishes fit in the dishwasher")
    assert query_features(numeric, old, new, 0.0, 0.0)["q_state"] == 0.0


def _probability(old: str, new: str, query: str) -> float:
    scorers = load_scorers(None)
    t = RelationThresholds.from_config(HeartConfig())
    ctx = QueryContext(query_view(query), {old: 0.5, new: 0.3})
    return read_probability(features(old), features(new), 0.2, t, scorers.read, ctx)


@pytest.mark.parametrize(
    ("old", "new", "query"),
    [
        # A question, another identifier, another holder in parallel: the rules decide.
        ("Which gym opens earliest on Sundays?", "My gym opens at 6 on Sundays.",
         "when does my gym open"),
        ("Room 12 seats 30 people.", "Room 14 seats 45 people.",
         "how many people does room 12 seat"),
        ("The Oslo office has 40 desks.", "The Bergen office has 55 desks.",
         "how many desks does the Oslo office have"),
    ],
)  # fmt: skip
def test_the_rules_still_veto_at_read_time(old: str, new: str, query: str) -> None:
    assert _probability(old, new, query) == 0.0


@pytest.mark.parametrize(
    ("old", "new", "query"),
    [
        # In parallel, with more than a value changed (a verb, an added word or time), and
        # the newer announcing the change.
        ("The billing worker is pinned to Python 3.10.",
         "bumped billing worker to python 3.12 tonight",
         "which python version does the billing worker run"),
        ("Our cleaner comes on Tuesdays.", "oh the cleaner comes Fridays now",
         "when does the cleaner come"),
        # An identifier swapped where the newer announces the change: it is the value.
        ("The staging VPN passphrase is otter55.",
         "Changed the staging VPN passphrase to heron81.", "what is the staging vpn passphrase"),
        # A correction: the newer denies the older's name ("…, not Stefan").
        ("The piano tuner is called Stefan.", "sorry, the piano tuner is Stefanie, not Stefan",
         "what's the piano tuner called"),
        # A new one acquired: the number is the value, not another identifier.
        ("The clinic's phone number is 555-0117.",
         "The clinic has a new phone number: 555-0164.", "what is the clinic's phone number"),
    ],
)  # fmt: skip
def test_a_parallel_pair_whose_newer_announces_the_change_is_an_update_at_read_time(
    old: str, new: str, query: str
) -> None:
    t = RelationThresholds.from_config(HeartConfig())
    assert read_ruled(query_view(query), features(old), features(new), t) == 1.0
    # Another holder in the same frame is no update: ruled out, or below even odds.
    other = new.replace("staging", "prod").replace("cleaner", "gardener")
    other = other.replace("billing worker", "search indexer").replace("piano", "organ")
    other = other.replace("clinic", "pharmacy")
    assert _probability(old, other, query) < 0.5


def test_two_states_of_one_numbered_item_answer_a_state_question_newest_first() -> None:
    t = RelationThresholds.from_config(HeartConfig())
    old = features("Ticket 7302: waiting on legal review")

    def ruled(new: str, query: str) -> float | None:
        return read_ruled(query_view(query), old, features(new), t)

    assert ruled("Ticket 7302: approved", "what's the status of ticket 7302") == 1.0
    assert ruled("Ticket 7320: approved", "what's the status of ticket 7302") == 0.0
    # Not a question about its state: the scorer weighs the pair.
    assert ruled("Ticket 7302: approved", "who is reviewing ticket 7302") is None
    # The number sign numbers a thing as "ticket" does.
    change = features("Change request #611 is waiting for the CAB.")
    query = query_view("has change request #611 been approved")
    assert read_ruled(query, change, features("#611 approved by the CAB."), t) == 1.0


def test_two_states_of_one_named_item_answer_a_status_question_newest_first() -> None:
    t = RelationThresholds.from_config(HeartConfig())
    old = features("Sent the loft permit application to the council, waiting to hear back.")

    def ruled(new: str, query: str) -> float | None:
        return read_ruled(query_view(query), old, features(new), t)

    query = "what's the status of the loft permit"
    assert ruled("loft permit approved!! builders can start in May", query) == 1.0
    assert ruled("Heard back on the loft: permit approved", query) == 1.0
    # Another item of the same kind: the query's words are not held alike.
    assert ruled("garage permit approved!! builders can start in May", query) is None
    # A yes/no question's words may be the value it asks about, which the newer may add.
    assert (
        ruled("loft permit approved!! builders can start in May", "is the loft permit approved")
        == 1.0
    )
    # The older holds no word of the query: the scorer weighs it; another value is no state.
    assert ruled("loft permit approved!! builders can start in May", "is it approved") is None
    nuts = features("Hannah is allergic to nuts.")
    asked = query_view("is Hannah allergic to nuts")
    assert read_ruled(asked, nuts, features("Hannah is allergic to shellfish."), t) != 1.0


def test_a_newer_fact_announcing_a_change_of_what_the_older_is_about_answers_first() -> None:
    t = RelationThresholds.from_config(HeartConfig())
    old = features("My cousin Dana works as a nurse at St. Luke's.")

    def ruled(new: str, query: str = "where does Dana work") -> float | None:
        return read_ruled(query_view(query), old, features(new), t)

    assert ruled("Dana switched to the children's hospital last month.") == 1.0
    club = features("The book club meets at Maria's place.")
    moved = features("Book club moved to the library from next month.")
    assert read_ruled(query_view("where does the book club meet"), club, moved, t) == 1.0
    # No change announced: the scorer weighs the pair.
    assert ruled("Dana works nights at the children's hospital.") is None
    # A change of something else: no anchor in common.
    assert ruled("Priya switched to the night shift last month.") != 1.0
    # A change the query does not ask about.
    assert ruled("Dana switched to the children's hospital.", "what car does Priya drive") != 1.0
    # Tied only by the kind of value asked for: another thing's new day.
    therapist = features("I see my therapist every Monday.")
    guitar = features("My guitar teacher switched me to Thursday evenings.")
    assert read_ruled(query_view("which day do I see my therapist"), therapist, guitar, t) is None


@pytest.mark.parametrize(
    ("query", "old", "new", "valued"),
    [
        (
            "How many regular members does the book club have?",
            "The book club has 9 regular members.",
            "Library room kept getting double-booked, so book club meets at the café now.",
            "Two more joined, so the book club is at 11 regular members now.",
        ),
        (
            "What time does pottery class start?",
            "Pottery class starts at 6:45.",
            "Finished converting Lantern Hill Pottery into an LLC.",
            "Pottery class got moved to 7:15 from next week.",
        ),
        (
            "How much is Oskar's rent?",
            "Oskar's rent is 11,200 kr a month.",
            "oskar cancelled hangar, climbs at Cragworks now.",
            "oskar's landlord raised the rent, it's 12,000 now.",
        ),
    ],
)
def test_a_newer_fact_without_a_value_of_the_asked_kind_gives_none(
    query: str, old: str, new: str, valued: str
) -> None:
    """Whatever the newer fact announces, where the query asks for an amount, a count or a
    time and it gives none, it replaces nothing; with such a value (read loosely: any
    number for an amount) the rules and the scorer decide as before."""
    t = RelationThresholds.from_config(HeartConfig())
    view = query_view(query)
    assert no_asked_value(view, statement(old), statement(new))
    assert read_ruled(view, features(old), features(new), t) == 0.0
    assert not no_asked_value(view, statement(old), statement(valued))
    assert read_ruled(view, features(old), features(valued), t) != 0.0


def test_a_question_for_a_state_a_name_or_a_version_asks_for_no_kind_of_value() -> None:
    """A state, a name or an identifier may change without a typed value: the rule stays
    out ("is the café still open": "The café closed for good"; "which version": "v3")."""
    for query, old, new in (
        ("is the café still open", "The café is open until 8.", "The café closed for good."),
        ("who runs the book club", "The book club is run by Ines.", "The book club folded."),
        ("which API version should partners integrate against",
         "Partners should integrate against API 2.", "All partner integrations target v3."),
    ):  # fmt: skip
        view = query_view(query)
        assert answers(view, statement(old))
        assert not no_asked_value(view, statement(old), statement(new))


@pytest.mark.parametrize(
    ("query", "old", "new"),
    [
        ("What day does the allotment committee meet?", "The allotment committee meets on "
         "Tuesdays.", "allotment cttee switched to weds, tues clashed with choir"),
        ("How long is the user's commute?", "My commute is about 25 minutes by bike.",
         "Since the move it's a 50-minute train ride each way."),
        ("How many subscribers are there?", "The newsletter has about 1,200 subscribers.",
         "We crossed 2,000 newsletter subscribers this week."),
        ("When is the launch?", "The launch is on March 12.", "Launch slipped to next week."),
        ("What time is pickup?", "Pickup is at 3:10.", "Pickup is at noon now."),
    ],
)  # fmt: skip
def test_a_value_the_slot_view_reads_otherwise_still_may_give_the_asked_kind(
    query: str, old: str, new: str
) -> None:
    """Read loosely: a day written short, a number joined to its unit (a kind of ride to
    the slot view), one it reads as a year, or a word of time may be the value asked for."""
    assert not no_asked_value(query_view(query), statement(old), statement(new))


def test_a_state_question_about_an_identifier_is_answered_by_what_names_it() -> None:
    query = query_view("what is the status of 014")
    old, new = statement("014 status: PLANNED"), statement("014 merged into main today.")
    assert answers(query, old) and answers(query, new)
    assert query_features(query, old, new, 0.0, 0.0)["q_state"] == 1.0
    assert not answers(query, statement("015 merged into main today."))


def test_the_packaged_read_scorer_reads_pair_and_query_features() -> None:
    read = load_scorers(None).read
    assert read.features == READ_FEATURES
    assert read.trained_on["embedder"] == "hashing-v1-384"
    assert read.threshold("read") == 0.5


@pytest.mark.parametrize(
    ("older", "newer", "query"),
    [
        ("The ferry leaves at 7:40.", "From Monday the ferry now goes at 8:05 instead.",
         "what time does the ferry leave"),
        # In parallel with more than a value changed: the scorer, not the rules, decides.
        ("Our cleaner comes on Tuesdays.", "oh the cleaner comes Fridays now",
         "when does the cleaner come"),
        # A state question about a numbered item: answered by what names the item.
        ("014 status: PLANNED", "014 merged into main today.", "what is the status of 014"),
        # The newer fact announces a change of what the older one is about.
        ("The book club meets at Maria's place.", "Book club moved to the library from next month.",
         "where does the book club meet"),
    ],
)  # fmt: skip
async def test_search_dates_an_older_value_the_query_ties_to_a_newer_one(
    kernel: MemoryKernel, clock: FrozenClock, older: str, newer: str, query: str
) -> None:
    facts, agent = kernel.heart.facts, "read-slot"
    old = await facts.learn(FactInput(agent_id=agent, content=older))
    clock.advance(days=1)
    new = await facts.learn(FactInput(agent_id=agent, content=newer))
    assert new.action is not LearnAction.REINFORCED
    hits = await facts.search(agent, query, k=5)
    ids: list[uuid.UUID] = [h.fact.id for h in hits]
    if (await facts.get(old.fact.id, agent_id=agent)).is_current:
        assert ids[:2] == [new.fact.id, old.fact.id]
        assert hits[1].newer_value == new.fact.id
    else:  # retired at write time: never recalled
        assert ids[0] == new.fact.id and old.fact.id not in ids


async def _learn_all(
    kernel: MemoryKernel, clock: FrozenClock, agent: str, texts: list[str]
) -> list[uuid.UUID]:
    ids = []
    for text in texts:
        clock.advance(days=1)
        outcome = await kernel.heart.facts.learn(FactInput(agent_id=agent, content=text))
        assert outcome.action is LearnAction.ADDED, text
        ids.append(outcome.fact.id)
    return ids


async def _just_below(kernel: MemoryKernel, agent: str, query: str, old: uuid.UUID,
                      new: uuid.UUID) -> int:  # fmt: skip
    """The ``k`` that recalls ``old`` by similarity but not ``new``."""
    found = await kernel.heart.facts.search(agent, query, k=50)
    ranked = [h.fact.id for h in sorted(found, key=lambda h: -h.similarity)]
    k = ranked.index(new)
    assert ranked.index(old) < k
    return k


async def test_search_finds_a_newer_value_recalled_below_the_top_k_that_names_the_same_thing(
    kernel: MemoryKernel, clock: FrozenClock
) -> None:
    agent, query = "read-deep", "how much does Biscuit weigh"
    old, *_, new = await _learn_all(kernel, clock, agent, [
        "Biscuit weighs 31 pounds.",
        "The carry-on suitcase weighs 7 kilos empty.", "The road bike weighs 8 kilos.",
        "How much the kettle weighs is on its box.",
        "Vet visit today - Biscuit was 27.5 lbs on the scale, so the diet food is working.",
    ])  # fmt: skip
    k = await _just_below(kernel, agent, query, old, new)
    hits = await kernel.heart.facts.search(agent, query, k=k)
    ids = [h.fact.id for h in hits]
    assert new in ids  # recalled from below the first k, and put first of its slot
    if old in ids:
        assert ids.index(old) == ids.index(new) + 1
        assert hits[ids.index(old)].newer_value == new


_READERS = """Ana Ben Chloe Dev Eli Farah Gus Hana Ivo Jun Kemi Lars Mira Noor Omar Pia Quinn Ravi
Sol Tess"""
_PAPERS = """lease contract menu manual brochure syllabus agenda handbook invoice itinerary recipe
report memo guide chart schedule map poster label ticket"""


async def test_search_finds_a_newer_value_beside_the_older_one_the_query_does_not_recall(
    kernel: MemoryKernel, clock: FrozenClock
) -> None:
    """The newer value shares no word or name with the query: more facts than a search
    reads rank above it. It lies beside the older value, which finds it (its successor)."""
    agent, query = "read-beside", "how many books have I read this year"
    # Each nearer the query than the newer value is, and further from the older value.
    others = [
        f"{n} read the {p} twice." for n, p in zip(_READERS.split(), _PAPERS.split(), strict=True)
    ]
    assert len(others) == SEARCH_POOL  # with the older fact, more than a search reads
    old, *_, new = await _learn_all(kernel, clock, agent, [
        "I'm at 9 books for the year.", *others,
        "Finished Piranesi on the train home, which puts my yearly total at 12.",
    ])  # fmt: skip
    found = await kernel.heart.facts.search(agent, query, k=50)
    ranked = [h.fact.id for h in sorted(found, key=lambda h: -h.similarity)]
    assert ranked.index(new) > SEARCH_POOL  # a search for k=2 reads SEARCH_POOL facts
    hits = await kernel.heart.facts.search(agent, query, k=2)
    assert [(h.fact.id, h.newer_value) for h in hits] == [(new, None), (old, new)]


async def test_a_successor_that_replaces_nothing_is_not_shown(
    kernel: MemoryKernel, clock: FrozenClock
) -> None:
    """The fact learned after the older one and nearest to it, not recalled, is another
    thing in the same frame ("level" for "books", "season" for "year"): neither shown nor
    taken for the newer value."""
    agent, query = "read-beside-not", "how many books have I read this year"
    others = [
        f"{n} read the {p} twice." for n, p in zip(_READERS.split(), _PAPERS.split(), strict=True)
    ]
    old, *_, beside = await _learn_all(kernel, clock, agent, [
        "I'm at 9 books for the year.", *others, "I'm at level 9 for the season.",
    ])  # fmt: skip
    found = await kernel.heart.facts.search(agent, query, k=50)
    ranked = [h.fact.id for h in sorted(found, key=lambda h: -h.similarity)]
    assert ranked.index(beside) > SEARCH_POOL
    hits = await kernel.heart.facts.search(agent, query, k=2)
    assert hits[0].fact.id == old and beside not in [h.fact.id for h in hits]
    assert all(h.newer_value is None for h in hits)


async def test_a_fact_below_the_top_k_sharing_only_a_word_dates_nothing(
    kernel: MemoryKernel, clock: FrozenClock
) -> None:
    agent, query = "read-deep-word", "what is my bedtime"
    old, new = await _learn_all(kernel, clock, agent, [
        "My weekday bedtime is 10:30.",
        "Dr. Osei wants me to take the levothyroxine at bedtime instead, around 10:30pm.",
    ])  # fmt: skip
    # Side by side, the read scorer takes the newer fact for a new bedtime ...
    both = await kernel.heart.facts.search(agent, query, k=2)
    assert [h.newer_value for h in both if h.fact.id == old] == [new]
    # ... but recalled below the facts returned, one word in common is not enough.
    await _learn_all(kernel, clock, agent, [
        "My bedtime routine is tea and a book.", "Bedtime for the kids is 8 on school nights.",
    ])  # fmt: skip
    k = await _just_below(kernel, agent, query, old, new)
    hits = await kernel.heart.facts.search(agent, query, k=k)
    assert new not in [h.fact.id for h in hits]
    assert [h.newer_value for h in hits if h.fact.id == old] == [None]


_MANAGER = "who is my manager"
_OLD_MANAGER = "My manager is Dana Whitfield."
# Newer facts that give a name after a change, and share no word with the manager.
_SCHOOL = "After winter break we switched Ava over to Hawthorne Montessori."
_REALTOR = "We parted ways with Linda and signed with Theo Baptiste instead."
_NEW_MANAGER = "Dana left for another company, so I report to Marcus Oyelaran now."


# Each fact's cosine to the query under the default embedder.
_TO_QUERY = {_OLD_MANAGER: 0.62, _SCHOOL: 0.12, _REALTOR: 0.0, _NEW_MANAGER: 0.07}


def _judge(recalled: list[str]) -> SlotJudge:
    scorers = load_scorers(None)
    t = RelationThresholds.from_config(HeartConfig())
    return read_judge(_MANAGER, {text: _TO_QUERY[text] for text in recalled}, t, scorers.read)


def test_a_tie_by_the_asked_kind_alone_is_told_from_a_tie_by_words() -> None:
    query, old = query_view(_MANAGER), statement(_OLD_MANAGER)
    assert tied_by_kind_only(query, old, statement(_SCHOOL))
    assert not tied_by_kind_only(query, old, statement(_NEW_MANAGER))  # "Dana"
    both = [_OLD_MANAGER, _SCHOOL, _REALTOR, "The boiler was serviced in May."]
    assert kind_crowd(query, _OLD_MANAGER, both) == 2  # the boiler gives no name


def test_two_newer_values_tied_only_by_the_asked_kind_date_nothing() -> None:
    # Alone, a stranger that gives a name after a change is taken for the new manager ...
    assert _judge([_OLD_MANAGER, _SCHOOL])(_OLD_MANAGER, _SCHOOL, 0.04)
    # ... beside another such stranger, nothing says which one it would be.
    crowded = _judge([_OLD_MANAGER, _SCHOOL, _REALTOR, _NEW_MANAGER])
    assert not crowded(_OLD_MANAGER, _SCHOOL, 0.04)
    assert not crowded(_OLD_MANAGER, _REALTOR, -0.04)
    # A newer value tied by a word is not part of the crowd.
    assert crowded(_OLD_MANAGER, _NEW_MANAGER, 0.15)
