"""Budgeted assembly: tiers, whole items, and the budget never exceeded (hypothesis)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_kernel.context.budget import assemble, render
from memory_kernel.context.tokens import (
    EncodingTokenCounter,
    EstimatingTokenCounter,
    tiktoken_counter,
)
from memory_kernel.errors import ConfigError
from memory_kernel.models.context import ContextItem, MemoryHit, MemorySource, NodeContent, Tier

COUNTER = EstimatingTokenCounter()
DAY = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


def node(name: str, tier: Tier, *texts: str) -> NodeContent:
    return NodeContent(
        node=name, title=name.title(), tier=tier, items=tuple(ContextItem(text=t) for t in texts)
    )


def test_everything_fits_in_a_large_budget_and_renders_in_display_order() -> None:
    sections = [
        node("working_memory", Tier.RECENT, "user: hi", "assistant: hello"),
        node("facts", Tier.STREAMED, "The user lives in Lisbon"),
        node("identity", Tier.SYSTEM, "You are Nous"),
        node("tool_results", Tier.TOOL, "found: trip to Porto"),
    ]
    out = assemble(sections, budget=10_000, counter=COUNTER)
    assert [s.node for s in out.sections] == ["identity", "facts", "tool_results", "working_memory"]
    assert out.text == render(out.sections)
    assert out.items_dropped == 0
    assert out.tokens_used == COUNTER.count(out.text)


def test_recent_messages_claim_first_and_keep_the_newest() -> None:
    recent = node("working_memory", Tier.RECENT, *(f"message number {i} " * 5 for i in range(10)))
    facts = node("facts", Tier.STREAMED, "a fact about the user " * 4)
    out = assemble([facts, recent], budget=60, counter=COUNTER)
    kept = out.sections[-1].items
    assert kept and kept[-1].text == recent.items[-1].text, "the newest message survives"
    assert all(s.node != "facts" for s in out.sections), "memories only get what is left"
    assert COUNTER.count(out.text) <= 60


def test_tool_results_come_before_streamed_memories() -> None:
    tool = node("tool_results", Tier.TOOL, "tool " * 40)
    facts = node("facts", Tier.STREAMED, "fact " * 40)
    out = assemble([facts, tool], budget=70, counter=COUNTER)
    assert [s.node for s in out.sections] == ["tool_results"]


def test_streamed_items_are_dropped_whole_never_cut() -> None:
    facts = node("facts", Tier.STREAMED, "short fact", "a much longer fact " * 20, "tiny")
    out = assemble([facts], budget=20, counter=COUNTER)
    texts = [i.text for i in out.sections[0].items]
    assert texts == ["short fact", "tiny"], "the long one is dropped whole, later ones still fit"
    assert out.items_dropped == 1


def test_system_fills_the_rest_and_is_truncated() -> None:
    persona = node("identity", Tier.SYSTEM, "word " * 200)
    out = assemble([persona], budget=50, counter=COUNTER)
    kept = out.sections[0].items[0].text
    assert 0 < len(kept) < len("word " * 200)
    assert COUNTER.count(out.text) <= 50


def test_empty_sections_and_zero_budget() -> None:
    out = assemble([node("facts", Tier.STREAMED)], budget=0, counter=COUNTER)
    assert out.text == "" and out.sections == [] and out.tokens_used == 0


def test_a_non_additive_tokenizer_still_never_exceeds() -> None:
    # Counts the whole text as more than its parts: the final check has to trim.
    def encode(text: str) -> list[int]:
        return [0] * (len(text.split()) + 3 * text.count("\n\n"))

    counter = EncodingTokenCounter(encode)
    sections = [node(f"n{i}", Tier.STREAMED, *(f"w{j} x" for j in range(5))) for i in range(6)]
    out = assemble(sections, budget=30, counter=counter)
    assert counter.count(out.text) <= 30


def test_tiktoken_adapter_is_optional() -> None:
    try:
        import tiktoken  # type: ignore[import-not-found]  # noqa: F401
    except ImportError:
        with pytest.raises(ConfigError, match="tiktoken"):
            tiktoken_counter()
    else:  # pragma: no cover - depends on the environment
        assert tiktoken_counter().count("hello world") >= 2


def test_estimator_is_subadditive_and_counts_words() -> None:
    assert COUNTER.count("") == 0
    assert COUNTER.count("a b c d e f") == 6
    assert COUNTER.count("x" * 40) == 10


_text = st.text(
    alphabet=st.characters(exclude_categories=["Cs"], exclude_characters="\x00"),
    max_size=120,
)
_section = st.builds(
    lambda name, tier, texts: node(name, tier, *texts),
    st.sampled_from(["working_memory", "facts", "episodic_memory", "identity", "tool_results"]),
    st.sampled_from(list(Tier)),
    st.lists(_text, max_size=8),
)


@settings(max_examples=300, deadline=None)
@given(
    sections=st.lists(_section, max_size=5, unique_by=lambda s: s.node),
    budget=st.integers(min_value=0, max_value=400),
    chars_per_token=st.sampled_from([1.0, 3.0, 4.0, 7.5]),
)
def test_budget_is_never_exceeded(
    sections: list[NodeContent], budget: int, chars_per_token: float
) -> None:
    counter = EstimatingTokenCounter(chars_per_token)
    out = assemble(sections, budget=budget, counter=counter)
    assert counter.count(out.text) <= budget
    assert out.tokens_used == counter.count(out.text)
    originals = {s.node: {i.text for i in s.items} for s in sections}
    for section in out.sections:
        for item in section.items:
            if section.tier is not Tier.SYSTEM:  # only system text may be truncated
                assert item.text in originals[section.node]


# -- recalled memories: what happened oldest first, best first claims -------------------------


def hit_item(text: str, score: float, when: datetime, source: MemorySource) -> ContextItem:
    hit = MemoryHit(
        source=source,
        id=uuid.uuid4(),
        text=text,
        similarity=score,
        confidence=0.7,
        recency=1.0,
        score=score,
        created_at=when,
    )
    return ContextItem(text=text, hit=hit)


def episodes_node(*items: ContextItem) -> NodeContent:
    return NodeContent(
        node="episodic_memory", title="Past episodes", tier=Tier.STREAMED, items=items
    )


def test_episodes_are_shown_oldest_first_each_line_as_given() -> None:
    # Each line carries its own date (nodes.format_hit): assembly adds no day lines, which
    # governed every item under them however far down.
    late = hit_item("Mel: we went camping", 0.9, DAY + timedelta(days=30), MemorySource.EPISODE)
    early_b = hit_item(
        "Caro: it was powerful", 0.8, DAY + timedelta(seconds=1), MemorySource.EPISODE
    )
    early_a = hit_item("Caro: I joined a group", 0.7, DAY, MemorySource.EPISODE)
    out = assemble([episodes_node(late, early_b, early_a)], budget=1000, counter=COUNTER)
    assert out.text == (
        "## Past episodes\n- Caro: I joined a group\n- Caro: it was powerful\n"
        "- Mel: we went camping"
    )
    assert [i.text for i in out.sections[0].items] == [i.text for i in (early_a, early_b, late)]
    assert out.text == render(out.sections)


def test_facts_keep_their_rank_order() -> None:
    fact = hit_item("Caro is a counselor", 0.5, DAY, MemorySource.FACT)
    other = hit_item("Mel paints", 0.9, DAY + timedelta(days=2), MemorySource.FACT)
    facts = NodeContent(node="facts", title="Known facts", tier=Tier.STREAMED, items=(other, fact))
    out = assemble([facts], budget=1000, counter=COUNTER)
    assert out.text == "## Known facts\n- Mel paints\n- Caro is a counselor"


_day = st.integers(min_value=0, max_value=3).map(lambda d: DAY + timedelta(days=d))
_hit = st.builds(
    hit_item,
    _text.filter(str.strip),
    st.floats(min_value=0.0, max_value=1.0),
    _day,
    st.sampled_from([MemorySource.EPISODE, MemorySource.FACT]),
)


@settings(max_examples=300, deadline=None)
@given(
    episodes=st.lists(_hit, max_size=10),
    facts=st.lists(_hit, max_size=10),
    budget=st.integers(min_value=0, max_value=300),
    chars_per_token=st.sampled_from([1.0, 4.0, 7.5]),
)
def test_budget_holds_with_day_lines(
    episodes: list[ContextItem], facts: list[ContextItem], budget: int, chars_per_token: float
) -> None:
    counter = EstimatingTokenCounter(chars_per_token)
    sections = [
        episodes_node(*episodes),
        NodeContent(node="facts", title="Known facts", tier=Tier.STREAMED, items=tuple(facts)),
    ]
    out = assemble(sections, budget=budget, counter=counter)
    assert counter.count(out.text) <= budget
    assert out.text == render(out.sections)
    kept = [i for s in out.sections for i in s.items]
    assert all(i in (*episodes, *facts) for i in kept), "whole items only, never cut"
    assert len(out.hits) == len(kept)


def test_the_same_memory_from_two_nodes_is_kept_once_the_best_one() -> None:
    told = "Caroline joined the LGBTQ support group on Friday"
    episode = hit_item(f"Caroline: {told.lower()}!", 0.9, DAY, MemorySource.EPISODE)
    fact = hit_item(told, 0.8, DAY, MemorySource.FACT)
    other = hit_item("Melanie painted a sunrise over the lake", 0.7, DAY, MemorySource.FACT)
    facts = NodeContent(node="facts", title="Known facts", tier=Tier.STREAMED, items=(fact, other))
    out = assemble([facts, episodes_node(episode)], budget=1000, counter=COUNTER)
    assert [h.text for h in out.hits] == [other.text, episode.text]
    assert out.duplicates == 1 and out.items_dropped == 0
    kept_all = assemble(
        [facts, episodes_node(episode)], budget=1000, counter=COUNTER, duplicate_overlap=1.0
    )
    assert len(kept_all.hits) == 3 and kept_all.duplicates == 0


def test_a_duplicate_left_out_costs_nothing() -> None:
    first = hit_item("the deploy of project 006 shipped on monday", 0.9, DAY, MemorySource.FACT)
    repeat = hit_item("Project 006: the deploy shipped on Monday", 0.8, DAY, MemorySource.FACT)
    last = hit_item("the user prefers teal", 0.1, DAY, MemorySource.FACT)
    facts = NodeContent(
        node="facts", title="Known facts", tier=Tier.STREAMED, items=(first, repeat, last)
    )
    room = sum(
        COUNTER.count(x) for x in ("## Known facts\n\n", f"- {first.text}\n", f"- {last.text}\n")
    )
    out = assemble([facts], budget=room, counter=COUNTER)
    assert [h.text for h in out.hits] == [first.text, last.text]
