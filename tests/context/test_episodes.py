"""A session's gist in a small budget: an episode whose line would take more than its share
of the turn's budget is shown as its part about the query (``context.episodes``); the pure
rule first, then through the hooks on real Postgres."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from memory_kernel import MemoryKernel
from memory_kernel.context.episodes import episode_chars, shorten_episodes
from memory_kernel.context.excerpt import ELLIPSIS
from memory_kernel.context.nodes import format_hit
from memory_kernel.models.context import ContextItem, MemoryHit, MemorySource, NodeContent, Tier
from memory_kernel.models.turns import TurnInput
from memory_kernel.testing import FrozenClock
from tests.context.exchanges import exchange

T0 = datetime(2026, 3, 2, tzinfo=UTC)
GIST = (
    "We repainted the hallway in a pale sage green over the weekend. "
    "The boiler service is booked with Northway Heating for the 14th. "
    "Our neighbour lent us a long ladder for the stairwell ceiling. "
    "The new kitchen tap from Harlow & Sons arrives on Friday."
)


def _item(source: MemorySource, text: str) -> ContextItem:
    hit = MemoryHit(
        source=source, id=uuid.uuid4(), text=text, similarity=0.5, confidence=0.7,
        recency=1.0, score=0.5, created_at=T0,
    )  # fmt: skip
    return ContextItem(text=format_hit(hit), hit=hit)


def test_the_share_of_the_budget_in_characters() -> None:
    assert episode_chars(1000, 0.1) == 400
    assert episode_chars(300, 0.1) == 120
    assert episode_chars(100, 0.1) == 80  # never shorter than a sentence's worth


def test_a_long_episode_is_shown_as_its_part_about_the_query() -> None:
    episode, turn = _item(MemorySource.EPISODE, GIST), _item(MemorySource.TURN, GIST)
    section = NodeContent(node="n", title="t", tier=Tier.STREAMED, items=(episode, turn))
    shown = shorten_episodes(section, ["boiler", "service"], 120)
    short, same = shown.items
    assert same == turn  # a turn has its own excerpt (context.excerpt, in the node)
    assert short.hit is not None and episode.hit is not None
    assert short.hit.text.startswith(ELLIPSIS + "The boiler service is booked")
    assert len(short.hit.text) <= 120 + 2 * len(ELLIPSIS)
    assert "Northway" in short.text and "sage green" not in short.text
    assert short.hit.id == episode.hit.id  # the same memory, as the repeat rules read it
    # Within its share, an episode is shown whole.
    assert shorten_episodes(section, ["boiler"], len(GIST)) == section


async def test_through_the_hooks_a_small_budget_shows_the_episode_about_the_question(
    kernel: MemoryKernel, clock: FrozenClock
) -> None:
    agent = "gist-agent"
    for sentence in GIST.split(". "):
        await exchange(kernel, agent, sentence.rstrip(".") + ".", "Noted.")
    await kernel.end_session(agent, "s1")
    clock.advance(timedelta(days=3))

    async def episode_line(budget: int) -> str:
        # Asked in the ended session: its own turns are the host's window, never recalled,
        # so the session is told by its episode alone.
        asked = await kernel.pre_turn(
            TurnInput(
                agent_id=agent, session_id="s1", message="When is the boiler service?",
                signals={"token_budget": budget},
            )
        )  # fmt: skip
        section = asked.text.split("## Past episodes\n", 1)[-1].split("\n\n", 1)[0]
        lines = [line for line in section.splitlines() if line.startswith("- [")]
        assert len(lines) == 1, asked.text
        return lines[0]

    whole, small = await episode_line(2000), await episode_line(300)
    assert "sage green" in whole and "Northway" in whole
    assert "Northway" in small and "sage green" not in small
    assert len(small) < len(whole)
