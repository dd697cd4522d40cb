"""How recalled turns read (pure): a long turn shows its part about the query, and relative
time is followed by the date it meant."""

from __future__ import annotations

from datetime import UTC, datetime

from memory_kernel.context.excerpt import ELLIPSIS, excerpt, sentences
from memory_kernel.dates import day, resolve_relative

LONG = (
    "Started the new job Monday - we're in a short-term rental in Round Rock until closing. "
    "The structural engineer said the cracks are normal settling, no repair needed. "
    "And the lender's float-down came through: we're now at 6.5%. "
    "I've booked Two Guys Hauling to move our stuff from the Chicago storage unit. "
    "Closing is March 22."
)


def test_a_short_turn_is_shown_whole() -> None:
    assert excerpt("  Our standup is on Mondays.  ", ["standup"], max_chars=100) == (
        "Our standup is on Mondays."
    )


def test_a_long_turn_shows_the_sentences_about_the_query() -> None:
    shown = excerpt(LONG, ["mortgage", "rate", "lender"], max_chars=150)
    assert shown.startswith(ELLIPSIS + "And the lender's float-down came through")
    assert "6.5%" in shown and len(shown) <= 152  # the text plus the two ellipses
    assert shown.endswith(ELLIPSIS)


def test_a_stop_inside_a_word_ends_no_sentence() -> None:
    text = "We're now at 6.5%. Use v4.2.1 of node.js, see example.com! Done? Yes."
    said = [text[start:end] for start, end in sentences(text)]
    assert said == [
        "We're now at 6.5%.", "Use v4.2.1 of node.js, see example.com!", "Done?", "Yes.",
    ]  # fmt: skip


def test_word_forms_match_on_their_first_five_letters() -> None:
    shown = excerpt(LONG, ["closed"], max_chars=100)  # "closing" / "closed": "closi"≠"close"
    assert shown.startswith("Started the new job")  # no sentence holds the word: the start
    shown = excerpt(LONG, ["hauler"], max_chars=100)  # "hauling" / "hauler": "hauli"≠"haule"
    assert shown.startswith("Started")
    assert "Hauling" in excerpt(LONG, ["hauling"], max_chars=100)


def test_a_sentence_longer_than_the_allowance_is_cut_around_the_query_word() -> None:
    text = "word " * 80 + "zebra crossing here " + "word " * 80
    shown = excerpt(text, ["zebra"], max_chars=60)
    assert "zebra" in shown and shown.startswith(ELLIPSIS) and shown.endswith(ELLIPSIS)
    assert len(shown) <= 62


def test_relative_time_is_followed_by_the_date_it_meant() -> None:
    said = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)  # a Monday
    text = (
        "I went to a support group yesterday. I painted that last year. Last Saturday I ran; "
        "last week was busy. 4 years ago I moved. Camping next month! Two weeks ago we met."
    )
    shown = resolve_relative(text, said)
    assert shown.startswith(text + " (")  # what was said stays as it was said
    notes = shown[len(text) + 2 : -1].split("; ")
    assert notes == [
        "yesterday: 7 May 2023", "last year: 2022", "last saturday: 6 May 2023",
        "last week: the week before 8 May 2023", "4 years ago: 2019", "next month: June 2023",
        "two weeks ago: 24 April 2023",
    ]  # fmt: skip
    assert resolve_relative("Nothing relative here.", said) == "Nothing relative here."
    assert day(said) == "8 May 2023"
    assert resolve_relative("see you next month", datetime(2023, 12, 31, tzinfo=UTC)) == (
        "see you next month (next month: January 2024)"
    )
