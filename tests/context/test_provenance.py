"""Extracted facts in the context (``context.provenance``): a fact yields to the dated line
it came from or that tells it, and shown alone it carries the day it was said."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from memory_kernel.context.budget import assemble, render
from memory_kernel.context.current import resolve_current
from memory_kernel.context.nodes import format_hit
from memory_kernel.context.provenance import few_extracted, said_at, source_turn
from memory_kernel.context.recall import relevant_fill
from memory_kernel.context.stale import demote_replaced
from memory_kernel.context.tokens import EstimatingTokenCounter
from memory_kernel.models.context import ContextItem, MemoryHit, MemorySource, NodeContent, Tier

COUNTER = EstimatingTokenCounter()
SAID = datetime(2024, 1, 9, 18, 30, tzinfo=UTC)
LEARNED = SAID + timedelta(days=1)
TURN_TEXT = (
    "Also, unrelated, I need to finish the novel for my book club first. We meet Tuesday "
    "evenings at the Kentish Town library and I'm about 200 pages behind."
)
FACT_TEXT = "We meet Tuesday evenings at the Kentish Town library."


def _hit(source: MemorySource, text: str, score: float, **extra: Any) -> MemoryHit:
    return MemoryHit(
        source=source,
        id=extra.pop("id", uuid.uuid4()),
        text=text,
        similarity=score,
        confidence=0.7,
        recency=1.0,
        score=score,
        created_at=extra.pop("created_at", SAID),
        **extra,
    )


def _extracted(text: str, score: float, turn: uuid.UUID) -> MemoryHit:
    meta = {"source": "extraction", "turn_id": str(turn), "said_at": SAID.isoformat()}
    return _hit(MemorySource.FACT, text, score, metadata=meta, created_at=LEARNED)


def _sections(*hits: MemoryHit) -> list[NodeContent]:
    by_node: dict[str, list[ContextItem]] = {"facts": [], "turns": [], "episodic_memory": []}
    node = {
        MemorySource.FACT: "facts",
        MemorySource.TURN: "turns",
        MemorySource.EPISODE: "episodic_memory",
    }
    for h in hits:
        by_node[node[h.source]].append(ContextItem(text=format_hit(h), hit=h))
    return [
        NodeContent(node=n, title=n, tier=Tier.STREAMED, items=tuple(items))
        for n, items in by_node.items()
    ]


def _shown(sections: list[NodeContent], budget: int = 1000) -> list[str]:
    return [h.text for h in assemble(sections, budget=budget, counter=COUNTER).hits]


def test_provenance_is_read_from_the_metadata_of_facts_only() -> None:
    turn = uuid.uuid4()
    fact = _extracted(FACT_TEXT, 0.9, turn)
    assert source_turn(fact) == turn and said_at(fact) == SAID
    assert source_turn(_hit(MemorySource.FACT, FACT_TEXT, 0.9)) is None
    broken = _hit(MemorySource.FACT, FACT_TEXT, 0.9, metadata={"turn_id": "nope"})
    assert source_turn(broken) is None and said_at(broken) is None
    episode = _hit(MemorySource.EPISODE, FACT_TEXT, 0.9, metadata={"turn_id": str(turn)})
    assert source_turn(episode) is None


def test_an_extracted_fact_is_shown_with_the_day_it_was_said() -> None:
    fact = _extracted(FACT_TEXT, 0.9, uuid.uuid4())
    assert format_hit(fact) == f"[9 January 2024] {FACT_TEXT}"
    host_fact = _hit(MemorySource.FACT, FACT_TEXT, 0.9)
    assert format_hit(host_fact) == FACT_TEXT  # a host's fact stays undated


def test_a_fact_ranked_first_yields_to_its_source_turn() -> None:
    turn = _hit(MemorySource.TURN, TURN_TEXT, 0.5, metadata={"role": "user"})
    fact = _extracted(FACT_TEXT, 0.9, turn.id)
    assert _shown(_sections(fact, turn)) == [TURN_TEXT]
    # Without provenance the same words are a distilled memory: it evicts the turn.
    host = _hit(MemorySource.FACT, FACT_TEXT, 0.9)
    assert _shown(_sections(host, turn)) == [FACT_TEXT]


def test_a_fact_ranked_after_its_source_turn_is_left_out() -> None:
    turn = _hit(MemorySource.TURN, TURN_TEXT, 0.9, metadata={"role": "user"})
    fact = _extracted("The user is about 200 pages behind.", 0.5, turn.id)
    out = assemble(_sections(fact, turn), budget=1000, counter=COUNTER)
    assert [h.text for h in out.hits] == [TURN_TEXT] and out.duplicates == 1


def test_a_fact_yields_to_an_episode_telling_it() -> None:
    episode = _hit(MemorySource.EPISODE, TURN_TEXT, 0.4)
    fact = _extracted(FACT_TEXT, 0.9, uuid.uuid4())
    assert _shown(_sections(fact, episode)) == [TURN_TEXT]


def test_the_fact_stays_when_its_turn_does_not_fit_in_its_place() -> None:
    turn = _hit(MemorySource.TURN, TURN_TEXT, 0.5, metadata={"role": "user"})
    fact = _extracted(FACT_TEXT, 0.9, turn.id)
    room = COUNTER.count("facts\n\n") + COUNTER.count(f"- {format_hit(fact)}\n") + 2
    assert _shown(_sections(fact, turn), budget=room) == [FACT_TEXT]


def test_the_fact_of_a_turn_shown_as_an_excerpt_stays_beside_it() -> None:
    turn = _hit(MemorySource.TURN, TURN_TEXT, 0.5, metadata={"role": "user"})
    fact = _extracted("The user is about 200 pages behind.", 0.9, turn.id)
    cut = ContextItem(text="[9 January 2024] user: …I need to finish the novel…", hit=turn)
    sections = _sections(fact)
    sections[1] = sections[1].model_copy(update={"items": (cut,)})
    assert _shown(sections) == [fact.text, TURN_TEXT]


def test_a_turn_is_not_stale_against_a_fact_said_in_it_or_after_it() -> None:
    # The fact replaced "a modern hotel near Shijo" and was learned (created) a day after
    # it was said: the turn it was said in, and anything said before the learning but
    # after the saying, states the new value, not the replaced one.
    turn = _hit(MemorySource.TURN, "We cancelled the modern hotel near Shijo station.", 0.9)
    fact = _extracted("A ryokan near the Shirakawa canal.", 0.5, turn.id).model_copy(
        update={"supersedes": ("A modern hotel near Shijo station.",)}
    )
    assert demote_replaced([turn, fact])[0].replaced_by is None
    other = turn.model_copy(update={"id": uuid.uuid4()})  # another turn, said the same day
    assert demote_replaced([other, fact])[0].replaced_by is None
    before = other.model_copy(update={"created_at": SAID - timedelta(days=30)})
    demoted = {h.id: h for h in demote_replaced([before, fact])}
    assert demoted[before.id].replaced_by == fact.id  # said before the change: stale
    # A host's fact is dated by when it was learned, as before.
    host = fact.model_copy(update={"metadata": {}})
    assert {h.id: h for h in demote_replaced([other, host])}[other.id].replaced_by == host.id


def test_a_read_time_pair_of_extracted_facts_does_not_reach_the_turns() -> None:
    turn = _hit(MemorySource.TURN, "Melanie has done an abstract painting too.", 0.9)
    turn = turn.model_copy(update={"created_at": SAID - timedelta(days=30)})
    old = _extracted("Melanie has done an abstract painting too.", 0.8, turn.id)
    old = old.model_copy(update={"created_at": SAID - timedelta(days=29)})
    new = _extracted("Melanie wanted the painting to have a serene vibe.", 0.7, uuid.uuid4())
    out = {h.id: h for h in resolve_current([turn, old, new], updates=lambda _o, _n: True)}
    assert out[old.id].replaced_by == new.id  # the older fact is linked, shown dated
    assert out[new.id].supersedes == ()  # but the guess is not written onto the turns
    assert demote_replaced(list(out.values()))[0].replaced_by is None
    # Host facts paired at read time still reach the turns that state the older value.
    host_old = old.model_copy(update={"metadata": {}})
    host_new = new.model_copy(update={"metadata": {}})
    out = {
        h.id: h for h in resolve_current([turn, host_old, host_new], updates=lambda _o, _n: True)
    }
    assert out[host_new.id].supersedes == (host_old.text,)


def test_an_extracted_fact_is_offered_only_when_about_the_query() -> None:
    relevant = _extracted("The book club meets on Thursdays.", 0.6, uuid.uuid4())
    chatter = _extracted("Two weeks to go!", 0.5, uuid.uuid4()).model_copy(
        update={"similarity": 0.0}
    )
    host = _hit(MemorySource.FACT, "The user lives in London.", 0.4).model_copy(
        update={"similarity": 0.0}
    )
    kept = relevant_fill([relevant, chatter, host], keep=5, ratio=0.1)
    assert kept == [relevant, host]  # the host's top facts are always offered


def test_a_fact_ranked_after_a_line_telling_it_is_left_out() -> None:
    # 8 of the fact's 10 words are in the episode: under the near-verbatim bar between two
    # memories (0.8), over the bar of a line telling it (0.7) — the rule either way round.
    episode = _hit(
        MemorySource.EPISODE,
        "I'm 29 weeks. My glucose test is scheduled for June 3, the drink is awful.",
        0.9,
    )
    fact = _extracted("The user's glucose test is scheduled for June 3.", 0.5, uuid.uuid4())
    out = assemble(_sections(fact, episode), budget=1000, counter=COUNTER)
    assert [h.text for h in out.hits] == [episode.text] and out.duplicates == 1
    first = _extracted("The user's glucose test is scheduled for June 3.", 0.95, uuid.uuid4())
    assert _shown(_sections(first, episode)) == [episode.text]


def test_a_node_offers_only_its_few_best_extracted_facts() -> None:
    extracted = [_extracted(f"Fact number {n}.", 0.9 - n / 100, uuid.uuid4()) for n in range(6)]
    host = [_hit(MemorySource.FACT, f"Host fact {n}.", 0.5) for n in range(3)]
    kept = few_extracted([*extracted[:3], *host, *extracted[3:]], 2)
    assert kept == [*extracted[:2], *host]


_said = st.sampled_from(
    [
        "We meet Tuesday evenings at the library.",
        "The user is about 200 pages behind.",
        "I picked the book, which is embarrassing.",
        "Book club moved to Thursdays.",
        "My pottery class is on Thursday too.",
    ]
)


@settings(max_examples=200, deadline=None)
@given(
    turns=st.lists(st.tuples(st.lists(_said, min_size=1, max_size=4), st.floats(0, 1)), max_size=6),
    facts=st.lists(st.tuples(_said, st.floats(0, 1), st.integers(0, 7)), max_size=8),
    budget=st.integers(min_value=0, max_value=400),
)
def test_the_budget_holds_whatever_yields(
    turns: list[tuple[list[str], float]], facts: list[tuple[str, float, int]], budget: int
) -> None:
    turn_hits = [_hit(MemorySource.TURN, " ".join(t), s) for t, s in turns]
    ids = [h.id for h in turn_hits] or [uuid.uuid4()]
    fact_hits = [_extracted(t, s, ids[n % len(ids)]) for t, s, n in facts]
    sections = _sections(*fact_hits, *turn_hits)
    out = assemble(sections, budget=budget, counter=COUNTER)
    assert COUNTER.count(out.text) <= budget
    assert out.text == render(out.sections)
    shown = {h.id for h in out.hits}
    # A fact is never shown beside its own source turn shown whole.
    assert not any(source_turn(h) in shown for h in out.hits)
