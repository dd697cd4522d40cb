"""The process side of faults: a ``post_turn`` (and a ``learn_many``) cancelled at each of its
await points leaves the database as it was — or, cancelled while COMMIT was already on the
wire, exactly as a finished call would (never in between) — and leaks no connection.

Await points covered: the embedder call, each SQL statement (cancelled from the engine's
``before_cursor_execute`` event, so the cancellation lands on that statement's await) and the
first loop iterations (connection checkout)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import pytest
from sqlalchemy import event

from memory_kernel import MemoryKernel
from memory_kernel.heart.facts import service
from memory_kernel.models.facts import FactInput
from memory_kernel.models.turns import TurnHandle, TurnInput, TurnOutcome
from memory_kernel.testing import FakeEmbedder
from tests.faults.helpers import signature

pytestmark = pytest.mark.faults

DECISION = (
    "We'll use PostgreSQL with pgvector rather than a separate vector database, because it "
    "keeps transactions and embeddings in one place."
)
Call = Callable[[str], Coroutine[Any, Any, object]]


class _Canceller:
    def __init__(self) -> None:
        self.task: asyncio.Task[Any] | None = None
        self.at: int | None = None
        self.seen = 0

    def __call__(self, *_args: Any) -> None:
        self.seen += 1
        if self.task is not None and self.seen == self.at:
            self.task.cancel()


async def _cancelled(kernel: MemoryKernel, call: Call, agent: str, at: int | None) -> bool:
    """Run ``call`` and cancel it just before its ``at``-th statement; True if cancelled."""
    canceller = _Canceller()
    engine = kernel.database.engine.sync_engine
    event.listen(engine, "before_cursor_execute", canceller)
    try:
        task: asyncio.Task[object] = asyncio.create_task(call(agent))
        canceller.task, canceller.at = task, at
        try:
            await task
        except asyncio.CancelledError:
            return True
        return False
    finally:
        event.remove(engine, "before_cursor_execute", canceller)


async def _statements(kernel: MemoryKernel, call: Call, agent: str) -> int:
    counter = _Canceller()
    engine = kernel.database.engine.sync_engine
    event.listen(engine, "before_cursor_execute", counter)
    try:
        await call(agent)
    finally:
        event.remove(engine, "before_cursor_execute", counter)
    return counter.seen


async def _check_every_statement(
    kernel: MemoryKernel, prepare: Callable[[str], Awaitable[None]], call: Call, name: str
) -> None:
    await prepare(f"{name}-ctl")
    before = await signature(kernel, f"{name}-ctl")
    total = await _statements(kernel, call, f"{name}-ctl")
    after = await signature(kernel, f"{name}-ctl")
    assert before != after
    for at in range(1, total + 1):
        agent = f"{name}-{at}"
        await prepare(agent)
        assert await _cancelled(kernel, call, agent, at)
        state = await signature(kernel, agent)
        assert state in (before, after), f"{name} cancelled at statement {at} left a partial write"
        assert kernel.database.leased == 0, "a cancelled call leaked"


async def test_post_turn_cancelled_at_every_statement(quiet_kernel: MemoryKernel) -> None:
    handles: dict[str, TurnHandle] = {}

    async def prepare(agent: str) -> None:
        turn = TurnInput(agent_id=agent, session_id="s", message="Which store?", frame="decision")
        handles[agent] = (await quiet_kernel.pre_turn(turn)).turn

    async def post(agent: str) -> object:
        return await quiet_kernel.post_turn(handles[agent], TurnOutcome(response_text=DECISION))

    await _check_every_statement(quiet_kernel, prepare, post, "pt")


@pytest.mark.parametrize("chunk", [64, 2])
async def test_learn_many_cancelled_at_every_statement(
    quiet_kernel: MemoryKernel, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    """Chunk 2: the batch's candidates are read in three chunks, each decided before the
    next is read — a cancellation may land on any of the reads."""
    monkeypatch.setattr(service, "READ_CHUNK", chunk)

    async def nothing(_agent: str) -> None:
        return None

    async def learn(agent: str) -> object:
        batch = [
            FactInput(agent_id=agent, subject=f"svc {i}", content=f"Service {i} runs on port {i}")
            for i in range(1, 6)
        ]
        return await quiet_kernel.heart.facts.learn_many(batch)

    await _check_every_statement(quiet_kernel, nothing, learn, f"lm{chunk}")


async def test_post_turn_cancelled_while_embedding_or_checking_out(
    quiet_kernel: MemoryKernel, embedder: FakeEmbedder
) -> None:
    turn = TurnInput(agent_id="emb", session_id="s", message="Which store?", frame="decision")
    handle = (await quiet_kernel.pre_turn(turn)).turn
    before = await signature(quiet_kernel, "emb")
    embedder.delay_s = 5.0  # the embedder hangs: cancel while post_turn awaits it
    task = asyncio.create_task(quiet_kernel.post_turn(handle, TurnOutcome(response_text=DECISION)))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    embedder.delay_s = 0.0
    assert await signature(quiet_kernel, "emb") == before
    # Cancel after each of the first loop iterations (checkout and the first awaits).
    for spins in range(12):
        task = asyncio.create_task(
            quiet_kernel.post_turn(handle, TurnOutcome(response_text=DECISION))
        )
        for _ in range(spins):
            await asyncio.sleep(0)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            assert await signature(quiet_kernel, "emb") == before, f"partial after {spins}"
            continue
        break  # it finished before the cancellation: every earlier point was covered
    assert quiet_kernel.database.leased == 0
    result = await quiet_kernel.post_turn(handle, TurnOutcome(response_text=DECISION))
    assert result.episode_id == handle.episode_id
