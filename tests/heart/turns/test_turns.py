"""The conversation itself is memory: ``post_turn`` stores the user's message and the reply
(role, session, episode, the clock's time, a vector each) with the turn's other writes or
not at all, and recall finds them — dated in the context, through ``search_memory`` with
``search_type="turns"``, per agent, also once the agent has a partition of its own.
Real Postgres."""

from __future__ import annotations

import uuid
from datetime import timedelta

import numpy as np
from sqlalchemy import select

from memory_kernel import MemoryKernel, NotFoundError
from memory_kernel.models.context import MemorySource
from memory_kernel.models.turns import TurnHandle, TurnInput, TurnOutcome
from memory_kernel.storage.partitions import rebalance
from memory_kernel.storage.tables import turns
from memory_kernel.storage.vector import as_array
from memory_kernel.testing import FrozenClock
from tests.conftest import open_promotable

AGENT = "agent-t"
REPLY = "Then pack a waterproof jacket and walking boots for Catbells."


async def _exchange(
    kernel: MemoryKernel, message: str, reply: str, *, session: str = "s1", agent: str = AGENT
) -> TurnHandle:
    ctx = await kernel.pre_turn(TurnInput(agent_id=agent, session_id=session, message=message))
    await kernel.post_turn(ctx.turn, TurnOutcome(response_text=reply))
    return ctx.turn


async def _stored(kernel: MemoryKernel, agent: str = AGENT) -> list[dict[str, object]]:
    async with kernel.database.connection() as conn:
        rows = await conn.execute(
            select(turns).where(turns.c.agent_id == agent).order_by(turns.c.created_at, turns.c.seq)
        )
        return [dict(r._mapping) for r in rows]


async def test_post_turn_stores_the_message_and_the_reply(
    kernel: MemoryKernel, clock: FrozenClock
) -> None:
    message = "We are walking in the Lake District in May, what should I pack?"
    asked = clock.now()
    handle = await _exchange(kernel, message, REPLY)
    stored = await _stored(kernel)
    assert [(r["role"], r["content"], r["seq"]) for r in stored] == [
        ("user", message, 0),
        ("assistant", REPLY, 1),
    ]
    for row in stored:
        assert row["session_id"] == "s1"
        assert row["episode_id"] == handle.episode_id
        assert row["created_at"] == asked  # the frozen clock's time
        vector = as_array(row["embedding"])
        assert vector is not None
        expected = (await kernel.embedder.embed([str(row["content"])]))[0]
        np.testing.assert_allclose(vector, expected, rtol=1e-5, atol=1e-6)


async def test_an_empty_reply_is_not_stored(kernel: MemoryKernel) -> None:
    await _exchange(kernel, "Note that the deploy window is Friday at noon.", "   ")
    assert [r["role"] for r in await _stored(kernel)] == ["user"]


async def test_a_failed_post_turn_stores_no_turn(kernel: MemoryKernel) -> None:
    ctx = await kernel.pre_turn(TurnInput(agent_id=AGENT, session_id="s1", message="Hello there"))
    broken = ctx.turn.model_copy(update={"episode_id": uuid.uuid4()})
    try:
        await kernel.post_turn(broken, TurnOutcome(response_text=REPLY))
    except NotFoundError:
        pass
    else:
        raise AssertionError("a turn of an unknown episode must fail")
    assert await _stored(kernel) == []


async def test_a_later_session_sees_the_turns_dated(
    kernel: MemoryKernel, clock: FrozenClock
) -> None:
    said = clock.now()
    await _exchange(kernel, "My sister Noor moved to Manchester for the hospital job.", "Lovely!")
    clock.advance(timedelta(days=40))
    ctx = await kernel.pre_turn(
        TurnInput(agent_id=AGENT, session_id="s2", message="Which city does Noor live in now?")
    )
    line = (
        f"[{said.day} {said:%B %Y}] user: My sister Noor moved to Manchester for the hospital job."
    )
    assert line in ctx.text
    assert ctx.report.context is not None and "turns" in ctx.report.context.fetched


async def test_search_memory_finds_turns_of_this_agent_only(kernel: MemoryKernel) -> None:
    await _exchange(kernel, "The book club moved to Thursdays at the library.", "Noted.")
    await _exchange(kernel, "Our book club meets on Mondays.", "Noted.", agent="other-agent")
    hits = await kernel.search_memory(AGENT, "book club", search_type="turns")
    assert hits[0].text == "The book club moved to Thursdays at the library."
    assert {h.text for h in hits} <= {hits[0].text, "Noted."}  # never the other agent's
    assert hits[0].source is MemorySource.TURN
    assert hits[0].metadata["role"] == "user" and hits[0].metadata["session_id"] == "s1"
    mixed = await kernel.search_memory(AGENT, "book club Thursdays", search_type="all")
    assert MemorySource.TURN in {h.source for h in mixed}


async def test_turns_of_a_promoted_agent_are_found_staged_and_indexed(
    pg_dsn: str, drop_schema: str
) -> None:
    kernel = await open_promotable(pg_dsn, drop_schema, index_worker=False)
    try:
        for i in range(60):  # 120 turns: past the 100 rows that promote an agent
            await _exchange(kernel, f"Shard {i} moves to rack r{i}.", f"Moving shard {i}.")
        promoted = await rebalance(kernel.database, kernel.clock.now())
        assert "turns" in {p.table for p in promoted}
        await _exchange(kernel, "The lighthouse cluster is retired.", "Understood.")
        expectations = (
            ("rack r17", "Shard 17 moves to rack r17."),
            ("lighthouse cluster", "The lighthouse cluster is retired."),
        )
        for query, expected in expectations:
            hits = await kernel.search_memory(AGENT, query, search_type="turns", limit=3)
            assert expected in [h.text for h in hits], (query, hits)
    finally:
        await kernel.close()


async def test_the_sessions_own_turns_are_left_to_the_hosts_window(kernel: MemoryKernel) -> None:
    said = "The staging database password rotates every Monday."
    await _exchange(kernel, said, "Noted.", session="s1")
    same = await kernel.pre_turn(
        TurnInput(agent_id=AGENT, session_id="s1", message="When does the password rotate?")
    )
    assert said not in same.text
    other = await kernel.pre_turn(
        TurnInput(agent_id=AGENT, session_id="s2", message="When does the password rotate?")
    )
    assert said in other.text
    hits = await kernel.search_memory(AGENT, "password rotate", search_type="turns")
    assert hits[0].text == said  # the tool searches every session
