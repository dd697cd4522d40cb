"""``forget`` and ``forget_session`` on a real PostgreSQL: a memory goes with what derives
from its content, in one transaction; what stays stops pointing at it; a wrong id erases
nothing."""

from __future__ import annotations

import asyncio
import itertools
import json
import uuid

import pytest
from sqlalchemy import select, text

from memory_kernel import ChatSummariser, FactInput, MemoryKernel, NotFoundError, ValidationError
from memory_kernel.cognitive.draft import summarise_message
from memory_kernel.erasure.policy import ERASED_SUMMARY, MAX_IDS
from memory_kernel.models.enums import FactStatus
from memory_kernel.models.episodes import AdmissionDecision
from memory_kernel.models.turns import ToolResult, TurnInput, TurnOutcome
from memory_kernel.storage.tables import decisions, episodes, facts, memory_events, turns
from memory_kernel.storage.vector import as_array
from memory_kernel.testing import FakeEmbedder, FrozenClock
from tests.conftest import schema_config
from tests.erasure.conftest import HeldExtractor, exchange, rows
from tests.httpserver import Reply, Request, chat_reply, serve

AGENT = "agent-e"
DECISION = (
    "We'll use PostgreSQL with pgvector rather than a separate vector database, because it "
    "keeps transactions and embeddings in one place."
)


async def _learn(kernel: MemoryKernel, content: str, subject: str | None = None) -> uuid.UUID:
    outcome = await kernel.heart.facts.learn(
        FactInput(agent_id=AGENT, content=content, subject=subject)
    )
    return outcome.fact.id


async def _fact_ids(kernel: MemoryKernel, agent: str = AGENT) -> dict[str, uuid.UUID]:
    async with kernel.database.connection() as conn:
        found = await conn.execute(
            select(facts.c.content, facts.c.id).where(facts.c.agent_id == agent)
        )
        return {r.content: r.id for r in found}


async def _turn_id(kernel: MemoryKernel, content: str, *, session: str = "s1") -> uuid.UUID:
    async with kernel.database.connection() as conn:
        found = await conn.scalar(
            select(turns.c.id).where(
                turns.c.agent_id == AGENT, turns.c.content == content,
                turns.c.session_id == session,
            )
        )  # fmt: skip
    assert isinstance(found, uuid.UUID), content
    return found


async def _events_about(kernel: MemoryKernel, ids: set[uuid.UUID]) -> int:
    async with kernel.database.connection() as conn:
        return int(
            await conn.scalar(
                select(text("count(*)"))
                .select_from(memory_events)
                .where(memory_events.c.memory_id.in_(ids) | memory_events.c.related_id.in_(ids))
            )
        )


async def test_a_fact_goes_with_its_earlier_versions_and_its_audit_rows(
    kernel: MemoryKernel,
) -> None:
    planned = await _learn(kernel, "Spec 006 is planned", "006 status")
    shipped = await _learn(kernel, "Spec 006 has shipped", "006 status")
    other = await _learn(kernel, "The user's dog is called Rex.")
    old = await kernel.heart.facts.get(planned, agent_id=AGENT)
    assert old.status is FactStatus.SUPERSEDED and old.superseded_by == shipped
    assert await _events_about(kernel, {planned, shipped}) > 0

    report = await kernel.forget(AGENT, [shipped])

    assert (report.facts, report.memories) == (2, 2)
    assert report.events > 0
    assert set(await _fact_ids(kernel)) == {"The user's dog is called Rex."}
    assert await _events_about(kernel, {planned, shipped}) == 0
    hits = await kernel.search_memory(AGENT, "spec 006 status", search_type="all")
    assert all("006" not in h.text for h in hits)
    assert (await kernel.heart.facts.get(other, agent_id=AGENT)).status is FactStatus.ACTIVE
    with pytest.raises(NotFoundError):
        await kernel.heart.facts.get(planned, agent_id=AGENT)


async def test_an_earlier_version_goes_alone_and_its_successor_stays(
    kernel: MemoryKernel,
) -> None:
    planned = await _learn(kernel, "Spec 006 is planned", "006 status")
    shipped = await _learn(kernel, "Spec 006 has shipped", "006 status")
    report = await kernel.forget(AGENT, [str(planned)])  # the text of an id works too
    assert report.facts == 1
    current = await kernel.heart.facts.get(shipped, agent_id=AGENT)
    assert current.status is FactStatus.ACTIVE
    assert await kernel.heart.facts.history(shipped, agent_id=AGENT) == [current]


async def test_a_wrong_id_erases_nothing(kernel: MemoryKernel) -> None:
    mine = await _learn(kernel, "The user's locker code is 4411.")
    theirs = (
        await kernel.heart.facts.learn(FactInput(agent_id="other", content="Other's code is 9."))
    ).fact.id
    before = await rows(kernel, AGENT), await rows(kernel, "other")
    for ids in ([mine, theirs], [mine, uuid.uuid4()]):
        with pytest.raises(NotFoundError, match="no memory of this agent"):
            await kernel.forget(AGENT, ids)
    assert (await rows(kernel, AGENT), await rows(kernel, "other")) == before
    await kernel.forget(AGENT, [mine])
    with pytest.raises(NotFoundError):  # already erased
        await kernel.forget(AGENT, [mine])


@pytest.mark.parametrize(
    ("agent", "ids", "message"),
    [
        (AGENT, [], "empty"),
        (AGENT, ["not-a-uuid"], "not a UUID"),
        (AGENT, [42], "not a UUID"),
        (AGENT, uuid.uuid4(), "collection"),
        (AGENT, str(uuid.uuid4()), "collection"),
        (AGENT, None, "collection"),
        (AGENT, [uuid.uuid4() for _ in range(MAX_IDS + 1)], "at most"),
        (AGENT, itertools.repeat(uuid.uuid4()), "at most"),  # endless
        ("", [uuid.uuid4()], "agent_id"),
        ("a\x00b", [uuid.uuid4()], "agent_id"),
    ],
)
async def test_bad_input_is_a_validation_error(
    kernel: MemoryKernel, agent: str, ids: object, message: str
) -> None:
    kept = await _learn(kernel, "The user's locker code is 4411.")
    with pytest.raises(ValidationError, match=message):
        await kernel.forget(agent, ids)  # type: ignore[arg-type]
    assert (await kernel.heart.facts.get(kept, agent_id=AGENT)).status is FactStatus.ACTIVE


async def _exported(kernel: MemoryKernel) -> str:
    return json.dumps([r async for r in kernel.export_agent(AGENT)])


async def _vector_of(kernel: MemoryKernel, episode_id: uuid.UUID) -> object:
    async with kernel.database.connection() as conn:
        return await conn.scalar(
            select(episodes.c.embedding).where(
                episodes.c.agent_id == AGENT, episodes.c.id == episode_id
            )
        )


async def test_a_turn_goes_with_its_extracted_facts_and_its_episode_is_made_again(
    ekernel: MemoryKernel,
) -> None:
    said_first, _ = await exchange(
        ekernel, AGENT, "My city is Paris and my passport number is X1234567.",
        "Paris is lovely in the spring.",
    )  # fmt: skip
    await exchange(ekernel, AGENT, "The garden needs new tulip bulbs for the border.", "Any time.")
    await exchange(ekernel, AGENT, "My dog is Rex.", session="s2")
    await ekernel.extract_pending(AGENT)
    learned = set(await _fact_ids(ekernel))
    assert "The user's dog is Rex." in learned and any("X1234567" in f for f in learned)
    (ended,) = await ekernel.end_session(AGENT, "s1")
    assert "X1234567" in ended.episode.summary
    said = await _turn_id(ekernel, "My city is Paris and my passport number is X1234567.")

    report = await ekernel.forget(AGENT, [said])

    assert (report.turns, report.episodes, report.remade) == (1, 0, 1)
    assert all("X1234567" not in f for f in await _fact_ids(ekernel))
    assert "The user's dog is Rex." in set(await _fact_ids(ekernel))
    # The episode stays, summarised again from the turns it still has, with a new vector.
    episode = await ekernel.heart.episodes.get(said_first.turn.episode_id, agent_id=AGENT)
    assert "X1234567" not in episode.summary and "tulip" in episode.summary
    assert episode.status is ended.episode.status
    assert episode.admission is ended.episode.admission
    assert await _vector_of(ekernel, episode.id) is not None
    hits = await ekernel.search_memory(AGENT, "passport number", search_type="all", limit=20)
    assert all("X1234567" not in h.text for h in hits)
    assert "X1234567" not in await _exported(ekernel)
    async with ekernel.database.connection() as conn:
        left = set(
            await conn.scalars(
                select(turns.c.episode_id).where(
                    turns.c.agent_id == AGENT, turns.c.session_id == "s1"
                )
            )
        )
    assert left == {episode.id}  # the session's other turns stay in it


async def test_an_ended_episode_with_no_turn_left_is_erased(ekernel: MemoryKernel) -> None:
    first, _ = await exchange(ekernel, AGENT, "My pin is 2580.", "Got it.")
    await ekernel.end_session(AGENT, "s1")
    said = [await _turn_id(ekernel, t) for t in ("My pin is 2580.", "Got it.")]

    report = await ekernel.forget(AGENT, said)

    assert (report.turns, report.episodes, report.remade) == (2, 1, 0)
    with pytest.raises(NotFoundError):
        await ekernel.heart.episodes.get(first.turn.episode_id, agent_id=AGENT)


async def test_the_episodes_merged_with_one_made_again_stay_as_they_are(
    ekernel: MemoryKernel, clock: FrozenClock
) -> None:
    talk = (
        "We moved the weekly sync of the platform team to Thursdays at ten.",
        "The platform team's weekly sync is now on Thursdays at ten.",
    )
    ends = []
    for session in ("s1", "s2"):  # both succeeded, each with its own reference: MERGE
        ctx, _ = await exchange(ekernel, AGENT, *talk, session=session)
        ended = await ekernel.heart.episodes.end(
            ctx.turn.episode_id, agent_id=AGENT, outcome="success", references=[session]
        )
        ends.append(ended)
        clock.advance(hours=2)
    assert ends[1].decision is AdmissionDecision.MERGE
    other = await ekernel.heart.episodes.get(ends[0].episode.id, agent_id=AGENT)

    report = await ekernel.forget(AGENT, [await _turn_id(ekernel, talk[0], session="s2")])

    assert (report.episodes, report.remade) == (0, 1)
    assert await ekernel.heart.episodes.get(ends[0].episode.id, agent_id=AGENT) == other


async def test_a_turn_of_the_ongoing_session_is_forgotten_and_the_session_goes_on(
    ekernel: MemoryKernel,
) -> None:
    first, _ = await exchange(ekernel, AGENT, "My pin is 2580.", "Got it.")
    pending = await ekernel.pre_turn(TurnInput(agent_id=AGENT, session_id="s1", message="Hm."))
    before = await ekernel.heart.episodes.get(first.turn.episode_id, agent_id=AGENT)
    assert "2580" in before.summary  # it started with the first message

    report = await ekernel.forget(AGENT, [await _turn_id(ekernel, "My pin is 2580.")])

    assert (report.turns, report.episodes) == (1, 0)
    # The turn already begun records into the episode, which goes on without the pin.
    await ekernel.post_turn(pending.turn, TurnOutcome(response_text="Okay."))
    later, _ = await exchange(
        ekernel, AGENT, "Plan a vegetarian curry for the dinner party on Saturday.",
        "A chickpea and spinach curry serves eight.",
    )  # fmt: skip
    assert later.turn.episode_id == first.turn.episode_id
    restarted = await ekernel.heart.episodes.get(first.turn.episode_id, agent_id=AGENT)
    assert restarted.summary == "Got it."  # the first turn it still has
    (ended,) = await ekernel.end_session(AGENT, "s1")
    assert "curry" in ended.episode.summary
    await ekernel.extract_pending(AGENT)
    assert await _fact_ids(ekernel) == {}
    assert "pin is 2580" not in await _exported(ekernel)


async def test_an_ongoing_episode_left_without_turns_is_abandoned_at_its_end(
    ekernel: MemoryKernel,
) -> None:
    first, _ = await exchange(ekernel, AGENT, "My pin is 2580.", "Got it.")
    said = [await _turn_id(ekernel, t) for t in ("My pin is 2580.", "Got it.")]

    await ekernel.forget(AGENT, said)

    episode = await ekernel.heart.episodes.get(first.turn.episode_id, agent_id=AGENT)
    assert episode.summary == ERASED_SUMMARY
    assert await ekernel.end_session(AGENT, "s1") == []  # nothing left to remember
    assert "pin is 2580" not in await _exported(ekernel)


async def test_the_episode_named_goes_even_while_ongoing(ekernel: MemoryKernel) -> None:
    first, _ = await exchange(ekernel, AGENT, "My pin is 2580.")
    pending = await ekernel.pre_turn(TurnInput(agent_id=AGENT, session_id="s1", message="Hm."))

    report = await ekernel.forget(AGENT, [first.turn.episode_id])

    assert (report.turns, report.episodes) == (0, 1)
    # A handle of the erased episode records nothing; the next turn starts a new episode.
    with pytest.raises(NotFoundError):
        await ekernel.post_turn(pending.turn, TurnOutcome(response_text="Okay."))
    later, _ = await exchange(ekernel, AGENT, "What should I cook tonight?", "Try a curry.")
    assert later.turn.episode_id != first.turn.episode_id


async def test_a_turn_takes_the_decision_whose_text_came_from_it(ekernel: MemoryKernel) -> None:
    asked = "Should payroll move to vendor ZQX9 or stay where it is?"
    await exchange(ekernel, AGENT, asked, "Okay.", frame="decision")  # rejected: the ask stays
    await exchange(
        ekernel, AGENT, "Which database for the new service?", DECISION, frame="decision"
    )
    async with ekernel.database.connection() as conn:
        kept = {r.description: r.finalized for r in await conn.execute(
            select(decisions.c.description, decisions.c.finalized)
            .where(decisions.c.agent_id == AGENT)
        )}  # fmt: skip
    assert kept == {summarise_message(asked): False, DECISION: True}

    # The message of the rejected one, and the reply of the finalized one, go; the other
    # turn of each exchange stays, no longer naming a decision.
    said = [await _turn_id(ekernel, asked), await _turn_id(ekernel, DECISION)]
    report = await ekernel.forget(AGENT, said)

    assert (report.turns, report.decisions) == (2, 2)
    exported = await _exported(ekernel)
    assert "ZQX9" not in exported and "pgvector" not in exported
    async with ekernel.database.connection() as conn:
        left = (await conn.execute(
            select(turns.c.content, turns.c.metadata).where(turns.c.agent_id == AGENT)
        )).all()  # fmt: skip
    assert {(r.content, "decision_id" in r.metadata) for r in left} == {
        ("Okay.", False), ("Which database for the new service?", False)
    }  # fmt: skip


async def test_a_finalized_decision_stays_when_only_the_question_goes(
    ekernel: MemoryKernel,
) -> None:
    await exchange(
        ekernel, AGENT, "Which database for the new service?", DECISION, frame="decision"
    )

    report = await ekernel.forget(
        AGENT, [await _turn_id(ekernel, "Which database for the new service?")]
    )

    assert (report.turns, report.decisions) == (1, 0)
    async with ekernel.database.connection() as conn:
        assert (
            await conn.scalar(select(decisions.c.description).where(decisions.c.agent_id == AGENT))
            == DECISION
        )


async def test_a_drain_that_read_an_erased_turn_learns_nothing_from_it(
    ekernel: MemoryKernel, extractor: HeldExtractor
) -> None:
    await exchange(ekernel, AGENT, "My city is Paris.")
    extractor.release.clear()
    drain = asyncio.create_task(ekernel.extract_pending(AGENT))
    await extractor.reading.wait()  # claimed, and the extractor is reading the turns
    await ekernel.forget(AGENT, [await _turn_id(ekernel, "My city is Paris.")])
    extractor.release.set()
    report = await drain
    # Only the reply, which stays, was settled; the message's row was gone.
    assert report.turns == 1 and report.facts == {}
    assert await _fact_ids(ekernel) == {}
    assert (await rows(ekernel, AGENT))["extraction_queue"] == 0


async def test_a_session_goes_with_all_it_formed(ekernel: MemoryKernel) -> None:
    remember = ToolResult(
        tool_name="remember", arguments={"content": "The user's locker code is 4411."}
    )
    await exchange(ekernel, AGENT, "My city is Paris.", tool_results=[remember])
    await exchange(ekernel, AGENT, "How should we store embeddings?", DECISION, frame="decision")
    await exchange(ekernel, AGENT, "My dog is Rex.", session="s2")
    await ekernel.extract_pending(AGENT)
    await ekernel.end_session(AGENT, "s1")
    before = await rows(ekernel, AGENT)
    assert before["decisions"] == 1

    report = await ekernel.forget_session(AGENT, "s1")

    assert (report.turns, report.episodes, report.decisions) == (4, 1, 1)
    assert report.facts == 2  # extracted from its turns, and remembered in it
    assert set(await _fact_ids(ekernel)) == {"The user's dog is Rex."}
    after = await rows(ekernel, AGENT)
    assert (after["turns"], after["episodes"], after["decisions"]) == (2, 1, 0)
    assert after["turn_results"] == before["turn_results"] - 2
    empty = await ekernel.forget_session(AGENT, "never-was")
    assert empty.memories == 0 and empty.agent_id == AGENT


async def test_a_prefetched_recall_of_an_erased_fact_is_not_served(kernel: MemoryKernel) -> None:
    code = await _learn(kernel, "The user's locker code is 4411.")
    await exchange(kernel, AGENT, "What is my locker code?", "It's on file.")
    await kernel.context.prefetch.wait()
    await kernel.forget(AGENT, [code])
    ctx = await kernel.pre_turn(
        TurnInput(agent_id=AGENT, session_id="s1", message="My locker code, again?")
    )
    assert "4411" not in ctx.text
    assert ctx.report.context is not None and not ctx.report.context.prefetch_used


async def test_the_forget_tool_is_offered_on_request_and_runs_on_search_ids(
    kernel: MemoryKernel,
) -> None:
    assert "forget_memory" not in {t["function"]["name"] for t in kernel.tool_schemas()}
    tools = {t["function"]["name"]: t["function"] for t in kernel.tool_schemas(forget=True)}
    params = tools["forget_memory"]["parameters"]
    assert params["required"] == ["memory_ids"] and not params["additionalProperties"]
    await _learn(kernel, "The user's old address is 12 Elm Street.")
    await _learn(kernel, "The user's dog is called Rex.")
    # The host shows search_memory hits with their ids; the model names those to forget.
    hits = await kernel.search_memory(AGENT, "old address Elm Street", search_type="facts")
    arguments = {"memory_ids": [str(h.id) for h in hits if "Elm" in h.text]}
    report = await kernel.forget(AGENT, arguments["memory_ids"])
    assert report.facts == 1
    assert set(await _fact_ids(kernel)) == {"The user's dog is called Rex."}


async def test_an_ended_episode_keeps_a_model_written_summary_after_an_erasure(
    pg_dsn: str, drop_schema: str, clock: FrozenClock, embedder: FakeEmbedder
) -> None:
    """Before, a summary a ChatSummariser wrote was replaced by the extractive one when a
    turn of its episode was erased; now the model writes it again from the turns left."""
    down = False

    def model(request: Request) -> Reply:
        if down:
            return Reply(status=400, body=b'{"error": "bad request"}')
        turns = json.loads(request.json()["messages"][1]["content"])["turns"]
        return chat_reply(f"MODEL: {' / '.join(t['text'] for t in turns)}")

    with serve(model) as server:
        async with (
            ChatSummariser(server.url, "summary-model") as summariser,
            MemoryKernel.open(
                pg_dsn, config=schema_config(drop_schema), clock=clock, embedder=embedder,
                summariser=summariser,
            ) as kernel,
        ):  # fmt: skip
            await exchange(kernel, AGENT, "My passport number is X1234567.", "Noted.")
            await exchange(kernel, AGENT, "Tulip bulbs go in the border.", "Any time.")
            (ended,) = await kernel.end_session(AGENT, "s1")
            assert (
                ended.episode.summary.startswith("MODEL: ") and "X1234567" in ended.episode.summary
            )
            said = await _turn_id(kernel, "My passport number is X1234567.")

            report = await kernel.forget(AGENT, [said])

            episode = await kernel.heart.episodes.get(ended.episode.id, agent_id=AGENT)
            assert report.remade == 1 and episode.summary.startswith("MODEL: ")
            assert "X1234567" not in episode.summary and "Tulip bulbs" in episode.summary
            stored = as_array(await _vector_of(kernel, episode.id))
            assert stored is not None
            assert stored.tolist() == pytest.approx(
                list((await embedder.embed([episode.summary]))[0]), abs=1e-6
            )
            # A model that fails leaves the extractive summary the erasure wrote.
            down = True
            noted = await _turn_id(kernel, "Noted.")
            await kernel.forget(AGENT, [noted])
            episode = await kernel.heart.episodes.get(ended.episode.id, agent_id=AGENT)
            assert not episode.summary.startswith("MODEL: ") and "Tulip" in episode.summary
