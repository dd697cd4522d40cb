"""The report's token figures have one source of truth, the count of the assembled text:
``tokens_used == count(text) == sum(tokens_by_node) == sum(tokens_by_tier)``, whatever the
sections hold (hypothesis) and whatever the tokenizer (additive or not)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from memory_kernel import MemoryKernel
from memory_kernel.context.budget import Assembly, assemble
from memory_kernel.context.engine import ContextEngine
from memory_kernel.context.tokens import EncodingTokenCounter, EstimatingTokenCounter
from memory_kernel.models.context import (
    ContextItem,
    ContextRequest,
    MemoryHit,
    MemorySource,
    NodeContent,
    Tier,
)
from memory_kernel.protocols import TokenCounter

from .conftest import add_episode, add_fact

A = "agent-a"
DAY = datetime(2024, 2, 3, 9, 30, tzinfo=UTC)
# Not additive at all: a token per word, plus one per punctuation mark.
WORDISH = EncodingTokenCounter(
    lambda t: t.split() + [c for c in t if not c.isalnum() and not c.isspace()]
)
COUNTERS: list[TokenCounter] = [
    EstimatingTokenCounter(1.0),
    EstimatingTokenCounter(4.0),
    EstimatingTokenCounter(7.5),
    EncodingTokenCounter(list),  # one token per character
    WORDISH,
]


def assert_consistent(out: Assembly, counter: TokenCounter) -> None:
    assert out.tokens_used == counter.count(out.text)
    assert sum(out.tokens_by_node.values()) == out.tokens_used
    assert sum(out.tokens_by_tier.values()) == out.tokens_used
    assert set(out.tokens_by_node) == {s.node for s in out.sections}
    assert set(out.tokens_by_tier) == {s.tier.value for s in out.sections}
    assert all(v >= 0 for v in out.tokens_by_node.values())


_text = st.text(
    alphabet=st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=90
)


@st.composite
def _item(draw: st.DrawFn) -> ContextItem:
    text = draw(_text)
    source = draw(st.sampled_from([None, MemorySource.EPISODE, MemorySource.FACT]))
    if source is None or not text.strip():
        return ContextItem(text=text)
    when = DAY + timedelta(days=draw(st.integers(0, 3)), seconds=draw(st.integers(0, 9)))
    score = draw(st.floats(min_value=0.0, max_value=1.0))
    hit = MemoryHit(
        source=source, id=uuid.uuid4(), text=text, similarity=score, confidence=0.7,
        recency=1.0, score=score, created_at=when,
    )  # fmt: skip
    return ContextItem(text=text, hit=hit)


_section = st.builds(
    lambda name, title, tier, items: NodeContent(
        node=name, title=title, tier=tier, items=tuple(items)
    ),
    st.sampled_from(["identity", "working_memory", "facts", "episodic_memory", "tool_results"]),
    _text,
    st.sampled_from(list(Tier)),
    st.lists(_item(), max_size=7),
)


@settings(max_examples=400, deadline=None)
@given(
    sections=st.lists(_section, max_size=5, unique_by=lambda s: s.node),
    budget=st.integers(min_value=0, max_value=500),
    counter=st.sampled_from(COUNTERS),
)
def test_tokens_used_is_the_sum_of_the_nodes(
    sections: list[NodeContent], budget: int, counter: TokenCounter
) -> None:
    out = assemble(sections, budget=budget, counter=counter)
    assert_consistent(out, counter)
    assert out.tokens_used <= budget


def test_the_blank_line_between_sections_is_charged_to_the_section_after_it() -> None:
    counter = EncodingTokenCounter(list)
    identity = NodeContent(
        node="identity", title="Identity", tier=Tier.SYSTEM, items=(ContextItem(text="Nous"),)
    )
    recent = NodeContent(
        node="working_memory", title="Recent", tier=Tier.RECENT, items=(ContextItem(text="hi"),)
    )
    out = assemble([recent, identity], budget=1000, counter=counter)
    assert out.text == "## Identity\n- Nous\n\n## Recent\n- hi"
    assert out.tokens_by_node == {
        "identity": len("## Identity\n- Nous"),
        "working_memory": len("\n\n## Recent\n- hi"),
    }


async def test_a_greeting_and_a_question_report_consistent_tokens(
    kernel: MemoryKernel, engine: ContextEngine
) -> None:
    await add_fact(kernel, A, "The user waters the garden tomatoes every morning")
    await add_episode(kernel, A, "We talked about the tomatoes in the garden")
    for message, extra in (
        ("Hey!", {"recent_messages": ["user: hi there", "assistant: hello"]}),
        ("how often do the garden tomatoes get water?", {"tool_results": ["search: daily"]}),
        ("and what else?", {"recent_messages": ["user: tomatoes " * 30], "token_budget": 40}),
    ):
        ctx = await engine.build(
            ContextRequest(agent_id=A, session_id="s1", message=message, **extra)
        )
        report = ctx.report
        assert report.tokens_used == engine.counter.count(ctx.text)
        assert sum(report.tokens_by_node.values()) == report.tokens_used, message
        assert sum(report.tokens_by_tier.values()) == report.tokens_used, message
        assert set(report.tokens_by_node) == {s.node for s in ctx.sections}
