"""One episode per session, not per message: the session's turns share its ongoing episode;
it ends when the host ends the session (``kernel.end_session``) or after
``episode_idle_end_s`` without a turn (``consolidate``, ``kernel.end_idle_episodes``), with a
summary built from its turns, through admission. Real Postgres; the summary rule itself is
tested pure at the end."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import select

from memory_kernel import MemoryKernel
from memory_kernel.heart.episodes.sessions import IDLE, NO_TURN, NO_TURN_KEPT, SESSION_ENDED
from memory_kernel.heart.episodes.summary import SummaryTurn, summarise_turns
from memory_kernel.models.consolidation import ConsolidationAction
from memory_kernel.models.enums import AdmissionStatus, EpisodeStatus, EventKind
from memory_kernel.models.episodes import AdmissionDecision
from memory_kernel.models.turns import TurnHandle, TurnInput, TurnOutcome
from memory_kernel.storage.tables import memory_events
from memory_kernel.testing import FrozenClock

AGENT = "a1"


async def _exchange(
    kernel: MemoryKernel, message: str, reply: str = "Noted.", *, session: str = "s1",
    agent: str = AGENT,
) -> TurnHandle:  # fmt: skip
    ctx = await kernel.pre_turn(TurnInput(agent_id=agent, session_id=session, message=message))
    await kernel.post_turn(ctx.turn, TurnOutcome(response_text=reply))
    return ctx.turn


async def test_a_sessions_turns_share_one_episode(kernel: MemoryKernel, clock: FrozenClock) -> None:
    first = await _exchange(kernel, "I am repainting the hallway this weekend.")
    clock.advance(minutes=2)
    second = await _exchange(kernel, "Which finish is best for a busy hallway?")
    other = await _exchange(kernel, "Plan the quarterly budget review.", session="s2")
    assert second.episode_id == first.episode_id
    assert other.episode_id != first.episode_id
    episode = await kernel.heart.episodes.get(first.episode_id, agent_id=AGENT)
    assert episode.metadata["turns"] == 2
    # After the idle time the session's next turn starts a new episode.
    clock.advance(seconds=kernel.config.heart.episode_idle_end_s + 1)
    later = await _exchange(kernel, "Back again about the hallway paint.")
    assert later.episode_id != first.episode_id


async def test_end_session_summarises_the_turns_newest_value_first(
    kernel: MemoryKernel, clock: FrozenClock
) -> None:
    handle = await _exchange(
        kernel, "Our book club meets on Tuesday evenings at the Kentish Town library."
    )
    clock.advance(minutes=3)
    await _exchange(kernel, "The toast for Kemi's fortieth birthday dinner needs to be short.")
    clock.advance(minutes=3)
    await _exchange(
        kernel, "Update: the library closed on Tuesdays, so our book club meets on Thursday "
        "evenings at the Kentish Town library now.",
    )  # fmt: skip
    (ended,) = await kernel.end_session(AGENT, "s1")
    episode = ended.episode
    assert episode.id == handle.episode_id
    assert episode.status is EpisodeStatus.COMPLETED and episode.outcome == SESSION_ENDED
    assert ended.decision is AdmissionDecision.ADD
    assert episode.admission is AdmissionStatus.ACTIVE
    assert "Thursday evenings" in episode.summary and "Tuesday evenings" not in episode.summary
    assert "Kemi" in episode.summary
    hits = await kernel.heart.episodes.search(AGENT, "book club Thursday")
    assert [h.episode.id for h in hits] == [episode.id]
    assert await kernel.end_session(AGENT, "s1") == []  # nothing ongoing any more
    assert await kernel.end_session(AGENT, "never-seen") == []


async def test_an_episode_without_a_completed_turn_is_abandoned(kernel: MemoryKernel) -> None:
    ctx = await kernel.pre_turn(TurnInput(agent_id=AGENT, session_id="q1", message="Any news?"))
    assert await kernel.end_session(AGENT, "q1") == []
    episode = await kernel.heart.episodes.get(ctx.turn.episode_id, agent_id=AGENT)
    assert episode.status is EpisodeStatus.ABANDONED
    assert episode.admission is AdmissionStatus.NOT_ADMITTED
    async with kernel.database.connection() as conn:
        rows = await conn.execute(
            select(memory_events.c.event, memory_events.c.reason).where(
                memory_events.c.agent_id == AGENT, memory_events.c.memory_id == episode.id
            )
        )
        events = {(r.event, r.reason) for r in rows}
    assert (EventKind.EPISODE_ENDED.value, NO_TURN) in events


async def test_an_episode_whose_turns_were_all_wordless_is_abandoned(
    kernel: MemoryKernel,
) -> None:
    handle = await _exchange(kernel, "👍", "🙂", session="w1")  # nothing stored to recall
    assert await kernel.end_session(AGENT, "w1") == []
    episode = await kernel.heart.episodes.get(handle.episode_id, agent_id=AGENT)
    assert episode.status is EpisodeStatus.ABANDONED
    assert episode.metadata["turns"] == 1
    async with kernel.database.connection() as conn:
        reasons = set(
            await conn.scalars(
                select(memory_events.c.reason).where(memory_events.c.memory_id == episode.id)
            )
        )
    assert NO_TURN_KEPT in reasons


async def test_consolidate_ends_idle_episodes_and_a_dry_run_only_counts_them(
    kernel: MemoryKernel, clock: FrozenClock
) -> None:
    idle = await _exchange(kernel, "The boiler service is booked for the third of March.")
    clock.advance(seconds=kernel.config.heart.episode_idle_end_s + 60)
    fresh = await _exchange(kernel, "Remind me to water the fig tree.", session="s2")
    rehearsed = await kernel.consolidate(AGENT, dry_run=True)
    assert rehearsed.agents[0].counts[ConsolidationAction.EPISODES_ENDED] == 1
    still = await kernel.heart.episodes.get(idle.episode_id, agent_id=AGENT)
    assert still.status is EpisodeStatus.ONGOING
    report = await kernel.consolidate(AGENT)
    assert report.agents[0].counts[ConsolidationAction.EPISODES_ENDED] == 1
    ended = await kernel.heart.episodes.get(idle.episode_id, agent_id=AGENT)
    assert ended.status is EpisodeStatus.COMPLETED and ended.outcome == IDLE
    going = await kernel.heart.episodes.get(fresh.episode_id, agent_id=AGENT)
    assert going.status is EpisodeStatus.ONGOING  # not idle yet


async def test_consolidate_all_reaches_agents_with_only_episodes(
    kernel: MemoryKernel, clock: FrozenClock
) -> None:
    handle = await _exchange(kernel, "Book the train to Keswick for May.", agent="episodes-only")
    clock.advance(seconds=kernel.config.heart.episode_idle_end_s + 60)
    report = await kernel.consolidate_all()
    assert "episodes-only" in {a.agent_id for a in report.agents}
    ended = await kernel.heart.episodes.get(handle.episode_id, agent_id="episodes-only")
    assert ended.status is EpisodeStatus.COMPLETED


async def test_end_idle_episodes_on_the_facade(kernel: MemoryKernel, clock: FrozenClock) -> None:
    await _exchange(kernel, "The car's MOT is due in September.")
    assert await kernel.end_idle_episodes(AGENT) == []
    clock.advance(seconds=kernel.config.heart.episode_idle_end_s + 1)
    (ended,) = await kernel.end_idle_episodes(AGENT)
    assert ended.episode.outcome == IDLE and "MOT" in ended.episode.summary


# -- the summary rule (pure) ---------------------------------------------------------------

T0 = datetime(2024, 3, 18, 12, 0, tzinfo=UTC)


def _turns(*texts: tuple[str, str]) -> list[SummaryTurn]:
    return [SummaryTurn(role, text, T0 + timedelta(minutes=n)) for n, (role, text) in
            enumerate(texts)]  # fmt: skip


def test_a_newer_statement_replaces_an_older_one_about_the_same_thing() -> None:
    turns = _turns(
        ("user", "My sister Noor lives in Leeds near the station."),
        ("assistant", "Leeds is lovely in spring."),
        ("user", "Correction: my sister Noor lives in Manchester near the station now."),
    )
    summary = summarise_turns(turns, max_chars=500, fallback="x")
    assert "Manchester" in summary and "lives in Leeds" not in summary


def test_the_summary_keeps_the_key_sentences_within_the_budget_in_order() -> None:
    turns = _turns(
        ("user", "We are planning a trip to the Lake District in May. Hi!"),
        ("assistant", "For the Lake District in May, Catbells is a classic short walk."),
        ("user", "Catbells sounds right for the Lake District trip. Thanks!"),
        ("assistant", "Great, pack waterproofs for Catbells."),
    )
    summary = summarise_turns(turns, max_chars=120, fallback="x")
    assert len(summary) <= 120
    assert summary.startswith("We are planning a trip to the Lake District in May.")
    assert "Hi!" not in summary and "Thanks!" not in summary  # too short to say anything


def test_of_two_details_the_one_said_to_have_changed_is_kept() -> None:
    def kept(offsite: str, dinner: str) -> str:
        turns = _turns(
            ("user", f"The offsite is {offsite}in Lisbon for 40 people. "
                     f"The dinner is {dinner}in Porto for 25 people."),
            ("assistant", "Lisbon and Porto both work well for the offsite and the dinner."),
            ("user", "Thanks for the help with the offsite and dinner plans."),
        )  # fmt: skip
        return summarise_turns(turns, max_chars=50, fallback="x")

    assert kept("now ", "") == "The offsite is now in Lisbon for 40 people."
    assert kept("", "now ") == "The dinner is now in Porto for 25 people."


def test_without_a_sentence_worth_keeping_the_fallback_is_the_summary() -> None:
    assert summarise_turns(_turns(("user", "Hi!"), ("assistant", "Hello!")), max_chars=100,
                           fallback="the first message") == "the first message"  # fmt: skip
    assert summarise_turns([], max_chars=100, fallback="f") == "f"
